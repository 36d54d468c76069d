"""L1: billing belongs to the connection."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ladder.domain.types import Billing, CatalogEntry, Connection, Overage


def normalise_auth_type(value: str | None) -> str | None:
    """Trimmed and lower-case; empty means provider-wide (None)."""
    if value is None:
        return None
    value = value.strip().lower()
    return value or None


def catalog_key_label(provider: str, auth_type: str | None) -> str:
    return f"{provider}/{auth_type}" if auth_type else f"{provider} (provider-wide)"


@dataclass(frozen=True, slots=True)
class BillingVerdict:
    billing: Billing
    overage: Overage
    # False when no catalog row matched: the provider is uncurated and treated as metered.
    curated: bool
    entry: CatalogEntry | None = None
    # Where the effective overage came from: "keyless", "observed", "override", "catalog", "uncurated".
    overage_source: str = "catalog"


def catalog_row_for(
    catalog: Mapping[tuple[str, str | None], CatalogEntry], provider: str, auth_type: str | None
) -> CatalogEntry | None:
    """The row for provider and normalised auth_type, else the provider-wide row, else None."""
    auth = normalise_auth_type(auth_type)
    if auth is not None:
        row = catalog.get((provider, auth))
        if row is not None:
            return row
    return catalog.get((provider, None))


def classify_billing(
    connection: Connection, catalog: Mapping[tuple[str, str | None], CatalogEntry]
) -> BillingVerdict:
    if connection.keyless:
        return BillingVerdict("keyless", "hard-stop", curated=True, overage_source="keyless")
    row = catalog_row_for(catalog, connection.provider, connection.auth_type)
    reading = connection.reading
    if reading is not None and reading.observed_overage == "meters-to-paid":
        overage: Overage = "meters-to-paid"
        source = "observed"
    elif connection.overage_override is not None:
        overage, source = connection.overage_override, "override"
    elif row is not None:
        overage, source = row.overage, "catalog"
    else:
        overage, source = "unknown", "uncurated"
    if row is None:
        return BillingVerdict("unknown", overage, curated=False, overage_source=source)
    return BillingVerdict(row.billing, overage, curated=True, entry=row, overage_source=source)
