"""The whole state a resolution reads, as the domain's immutable snapshot, in a constant number of queries."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

import msgspec
from django.db import connection as db_connection
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from ladder import models as m
from ladder.domain.billing import catalog_row_for
from ladder.domain.budgets import period_bounds
from ladder.domain.types import (
    BUDGET_RUNGS,
    BudgetPeriod,
    CatalogEntry,
    Connection,
    LadderConfig,
    ModelEntry,
    Overage,
    Reading,
    Snapshot,
    Source,
    Window,
)
from ladder.domain.windows import effective_poll_interval_s
from ladder.selectors.connections import connection_poll_floor_s
from ladder.selectors.sql import READING_COLUMNS, WINDOW_COLUMNS, aware, json_list, sql_rows

logger = logging.getLogger(__name__)


def snapshot_load(*, now: datetime | None = None) -> Snapshot:
    """The whole state a resolution reads. `now` only picks the budget period of the spend.

    Rows are read as values, not model instances: this runs after every write of the state version,
    over every connection (the gateway's cache then keeps it: ladder.gateway.snapshot_cache)."""
    now = now or timezone.now()
    config = configuration_get().to_domain()
    readings = readings_latest()
    connections = tuple(
        connection_from_values(values, readings.get(values[0]), config=config)
        for values in m.Connection.objects.order_by("position", "id").values_list(*CONNECTION_FIELDS)
    )
    return Snapshot(
        config=config,
        billing_catalog=catalog_entries(),
        models=model_entries(),
        connections=connections,
        spend_usd=spend_usd(period=config.budget_period, now=now),
    )


def configuration_get() -> m.LadderConfiguration:
    """The stored configuration, or the settings' defaults when none is stored (a read never writes)."""
    return m.LadderConfiguration.objects.filter(pk=1).first() or m.LadderConfiguration.from_settings()


def state_version_get() -> int:
    return state_versions_get()[0]


def state_versions_get() -> tuple[int, int]:
    """The state version and the live version (models.StateVersion), in one query."""
    rows = sql_rows("versions")
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)


# --- live state: what gateways' reports change at every request ----------------------------------
# A connection's latest reading (with its latches) and its cooldown. Writers stamp the connection
# with the live version they bump (services.bump_live_version); a cached snapshot re-reads the
# connections stamped after it, in one query, and merges them in (snapshot_with_live).

LiveState = tuple["datetime | None", "Reading | None"]  # (cooldown_until, latest reading)


def live_state_since(live: int) -> dict[str, LiveState]:
    """Connection id → (cooldown_until, latest reading) of the connections whose live state was
    written after live version ``live``. One query, whatever the number of connections."""
    heads: dict[str, tuple[Any, ...]] = {}
    windows: dict[str, list[Window]] = defaultdict(list)
    for row in sql_rows("live", [live]):
        cid = row[0]
        if cid not in heads:
            heads[cid] = row[1:8]
        if row[8] is not None:  # the window's name: NULL when the reading has no window
            windows[cid].append(window_of(row[8:]))
    return {
        cid: (aware(head[0]), None if head[1] is None else reading_of(head[2:], windows[cid]))
        for cid, head in heads.items()
    }


def snapshot_with_live(snapshot: Snapshot, live: Mapping[str, LiveState]) -> Snapshot:
    """The snapshot with these connections' live state replaced (ids it does not hold are left out;
    the snapshot cache loads the whole state again for those). A new snapshot, with a memo of its own."""
    if not any(cid in snapshot.connections_by_id for cid in live):
        return snapshot
    connections = tuple(
        c if c.id not in live else connection_with_live(c, *live[c.id]) for c in snapshot.connections
    )
    return Snapshot(
        snapshot.config, snapshot.billing_catalog, snapshot.models, connections, snapshot.spend_usd
    )


def connection_with_live(
    connection: Connection, cooldown_until: datetime | None, reading: Reading | None
) -> Connection:
    """The connection with its live state replaced; every other field kept as it is."""
    return msgspec.structs.replace(connection, cooldown_until=cooldown_until, reading=reading)


def catalog_entries() -> tuple[CatalogEntry, ...]:
    rows = m.BillingCatalogEntry.objects.order_by("provider", F("auth_type").asc(nulls_first=True), "id")
    return tuple(CatalogEntry(*row) for row in rows.values_list(*CatalogEntry.__struct_fields__))


def model_entries() -> tuple[ModelEntry, ...]:
    rows = m.ModelCatalogEntry.objects.order_by("position", "id").values_list(*ModelEntry.__struct_fields__)
    return tuple(
        ModelEntry(provider, model, usd(input_usd), usd(output_usd), free, tuple(categories or ()))
        for provider, model, input_usd, output_usd, free, categories in rows
    )


def usd(amount: Decimal | None) -> float | None:
    """A price as the domain holds it (a float), None kept."""
    return None if amount is None else float(amount)


def readings_latest(*, connection_ids: Collection[str] | None = None) -> dict[str, Reading]:
    """Connection id → its latest reading (greatest fetched_at, then id), windows included. Two queries."""
    latest_id = (
        m.QuotaReading.objects.filter(connection_id=OuterRef("pk"))
        .order_by("-fetched_at", "-id")
        .values("id")[:1]
    )
    connections = m.Connection.objects.all()
    if connection_ids is not None:
        connections = connections.filter(pk__in=list(connection_ids))
    latest_ids = (
        connections.annotate(latest_id=Subquery(latest_id))
        .filter(latest_id__isnull=False)
        .values("latest_id")
    )
    windows: dict[int, list[Window]] = defaultdict(list)
    window_rows = m.QuotaWindow.objects.filter(reading_id__in=latest_ids).order_by(
        "reading_id", "position", "id"
    )
    for row in window_rows.values_list("reading_id", *WINDOW_COLUMNS):
        windows[row[0]].append(window_of(row[1:]))
    reading_rows = m.QuotaReading.objects.filter(id__in=latest_ids)
    return {
        row[0]: reading_of(row[2:], windows[row[1]])
        for row in reading_rows.values_list("connection_id", "id", *READING_COLUMNS)
    }


def reading_of(columns: Sequence[Any], windows: list[Window]) -> Reading:
    """A reading from its READING_COLUMNS, as the ORM or a raw cursor gives them (SQLite's: naive
    datetimes, booleans as 0/1)."""
    fetched_at, source, verifiable, observed_overage, note = columns
    return Reading(
        fetched_at=aware(fetched_at) or fetched_at,
        windows=tuple(windows),
        source=cast(Source, source),
        verifiable=bool(verifiable),
        observed_overage=cast("Overage | None", observed_overage),
        note=note,
    )


def window_of(columns: Sequence[Any]) -> Window:
    """A window from its WINDOW_COLUMNS, as the ORM or a raw cursor gives them (SQLite's: naive
    datetimes, JSON as text, booleans as 0/1)."""
    name, remaining_pct, reset_at, scope_models, latched, exhausts_at = columns
    return Window(
        name=name,
        remaining_pct=float(remaining_pct),
        reset_at=aware(reset_at),
        scope_models=json_list(scope_models),
        latched=bool(latched),
        exhausts_at=aware(exhausts_at),
    )


# The columns of a connection that the domain reads: its Connection's fields (the id first), but the
# latest reading (read apart) and the poll interval, which connection_from_values derives from the last.
CONNECTION_FIELDS = (
    *(name for name in Connection.__struct_fields__ if name not in ("reading", "poll_interval_s")),
    "min_poll_interval_s",
)


def connection_from_values(
    values: tuple[Any, ...], reading: Reading | None, *, config: LadderConfig
) -> Connection:
    """A row of `values_list(*CONNECTION_FIELDS)` as the domain's connection."""
    fields = dict(zip(CONNECTION_FIELDS, values, strict=True))
    floor_s = connection_poll_floor_s(fields["provider"], fields.pop("min_poll_interval_s"))
    models = fields.pop("models")
    return Connection(
        **fields,
        models=None if models is None else tuple(models),
        reading=reading,
        poll_interval_s=effective_poll_interval_s(config.refresh_interval_s, floor_s),
    )


def spend_usd(*, period: BudgetPeriod, now: datetime) -> dict[str, float]:
    """USD spent per budget rung in the budget period containing now; every budget rung present ($0 when
    none). One query on the spend counters (services.spend), whatever the volume of usage."""
    start, _ = period_bounds(now, period)
    spend = dict.fromkeys(BUDGET_RUNGS, 0.0)
    for rung, spent in sql_rows("spend", [period, db_connection.ops.adapt_datetimefield_value(start)]):
        spend[rung] = float(spent)
    return spend


def catalog_uncurated_kinds(*, snapshot: Snapshot) -> list[tuple[str, str | None]]:
    """(provider, auth_type) of non-keyless connections that no catalog row covers, first-seen order."""
    seen: list[tuple[str, str | None]] = []
    for connection in snapshot.connections:
        kind = (connection.provider, connection.auth_type)
        if connection.keyless or kind in seen:
            continue
        if catalog_row_for(snapshot.catalog_by_key, connection.provider, connection.auth_type) is None:
            seen.append(kind)
    return seen
