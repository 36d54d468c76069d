"""The billing catalog page: its rows, the kinds no row covers, the history of changes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from ladder.selectors.catalog import CatalogKind, CatalogRow, catalog_rows
from ladder.selectors.snapshot import catalog_uncurated_kinds, snapshot_load


class UncuratedKind(CatalogKind):
    """A kind no catalog row covers, as its curation form shows it."""

    @property
    def defaults(self) -> dict[str, str]:
        """An uncurated kind starts as unknown/unknown: the operator must choose, never a guess."""
        return {"billing": "unknown", "overage": "unknown"}

    @property
    def slug(self) -> str:
        return f"{self.provider}--{self.auth_type or 'any'}".replace(".", "-").replace(":", "-")


@dataclass
class CatalogPage:
    entries: list[CatalogRow]
    uncurated: list[UncuratedKind]


def catalog_page_build(*, now: datetime) -> CatalogPage:
    snapshot = snapshot_load(now=now)
    by_kind: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for connection in snapshot.connections:
        by_kind[(connection.provider, connection.auth_type)].append(connection.id)
    uncurated = [
        UncuratedKind(provider, auth, tuple(by_kind[(provider, auth)]))
        for provider, auth in catalog_uncurated_kinds(snapshot=snapshot)
    ]
    return CatalogPage(entries=catalog_rows(), uncurated=uncurated)
