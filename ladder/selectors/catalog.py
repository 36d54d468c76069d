"""The billing catalog as people curate it: its rows with their ids, the kinds (provider, auth type)
they name, and the history of the changes made on the dashboard (ladder.services.catalog writes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ladder import models as m
from ladder.domain.billing import catalog_key_label


@dataclass(frozen=True)
class CatalogKind:
    """A provider and auth type (None: provider-wide), and the connections of that kind."""

    provider: str
    auth_type: str | None
    connection_ids: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return catalog_key_label(self.provider, self.auth_type)


@dataclass(frozen=True, slots=True)
class CatalogRow:
    id: int
    provider: str
    auth_type: str | None
    billing: str
    overage: str
    source_url: str | None
    notes: str
    reviewed_at: datetime | None

    def __str__(self) -> str:
        return catalog_key_label(self.provider, self.auth_type)


def catalog_row_of(entry: m.BillingCatalogEntry) -> CatalogRow:
    """The row as a value (what a catalog service returned, say)."""
    return CatalogRow(*(getattr(entry, name) for name in CatalogRow.__slots__))


def catalog_rows() -> list[CatalogRow]:
    rows = m.BillingCatalogEntry.objects.order_by("provider", "auth_type", "id")
    return [CatalogRow(*row) for row in rows.values_list(*CatalogRow.__slots__)]


def catalog_row(*, entry_id: int) -> CatalogRow | None:
    row = m.BillingCatalogEntry.objects.filter(pk=entry_id).values_list(*CatalogRow.__slots__).first()
    return None if row is None else CatalogRow(*row)


@dataclass(frozen=True, slots=True)
class CatalogChangeRow:
    changed_at: datetime
    changed_by_name: str
    entry_label: str
    field: str
    old_value: str
    new_value: str


def catalog_changes(*, limit: int = 50) -> list[CatalogChangeRow]:
    """The latest changes made to the catalog on the dashboard, newest first."""
    rows = m.CatalogChange.objects.order_by("-changed_at", "-id")
    return [CatalogChangeRow(*row) for row in rows.values_list(*CatalogChangeRow.__slots__)[:limit]]
