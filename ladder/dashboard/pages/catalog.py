"""The billing catalog page: its rows, the kinds no row covers, the history of changes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from ladder import models as m
from ladder.selectors.snapshot import catalog_uncurated_kinds, snapshot_load


@dataclass(frozen=True)
class UncuratedKind:
    provider: str
    auth_type: str | None
    label: str
    connection_ids: tuple[str, ...]

    @property
    def defaults(self) -> dict[str, str]:
        """An uncurated kind starts as unknown/unknown: the operator must choose, never a guess."""
        return {"billing": "unknown", "overage": "unknown"}

    @property
    def slug(self) -> str:
        return f"{self.provider}--{self.auth_type or 'any'}".replace(".", "-").replace(":", "-")


@dataclass
class CatalogPage:
    entries: list[m.BillingCatalogEntry]
    uncurated: list[UncuratedKind]


def catalog_history(*, limit: int = 50) -> list[m.CatalogChange]:
    return list(m.CatalogChange.objects.order_by("-changed_at", "-id")[:limit])


def catalog_page_build(*, now: datetime) -> CatalogPage:
    snapshot = snapshot_load(now=now)
    by_kind: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for connection in snapshot.connections:
        by_kind[(connection.provider, connection.auth_type)].append(connection.id)
    uncurated = [
        UncuratedKind(provider, auth, m.catalog_key_label(provider, auth), tuple(by_kind[(provider, auth)]))
        for provider, auth in catalog_uncurated_kinds(snapshot=snapshot)
    ]
    entries = list(m.BillingCatalogEntry.objects.order_by("provider", "auth_type", "id"))
    return CatalogPage(entries=entries, uncurated=uncurated)
