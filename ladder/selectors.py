"""Reads: rows → the domain's immutable snapshot, in a constant number of queries."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, cast

import msgspec
import redis
from django.conf import settings
from django.db import connection as db_connection
from django.db import models
from django.db.models import Count, F, Min, OuterRef, Subquery
from django.utils import timezone

from ladder import models as m
from ladder.domain.alerts import (
    AUTO_ID_EMPTY,
    BEAT_SILENT,
    READINGS_STALE,
    SNAPSHOT_KINDS,
    AlertInputs,
    EmptyAutoId,
    PolledConnection,
)
from ladder.domain.alerts import Episode as AlertEpisodeSpec
from ladder.domain.alerts import Rule as AlertRuleSpec
from ladder.domain.billing import catalog_row_for
from ladder.domain.budgets import period_bounds
from ladder.domain.timefmt import format_utc
from ladder.domain.types import (
    BUDGET_RUNGS,
    Billing,
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
from ladder.domain.windows import effective_poll_interval_s, poll_floor_s, provider_poll_floor_s

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


# --- the reads of every API request, written by hand -----------------------------------------
# Each runs on every gateway call; the ORM spends ~0.3 ms compiling such a query, a prepared string
# ~0.02 ms (make bench-api). The strings name tables and columns from the models' metadata.


def _name(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return str(field.column)


def _column(model: type[models.Model], name: str) -> str:
    return f'"{model._meta.db_table}"."{_name(model, name)}"'


@cache
def _hot_sql() -> dict[str, str]:
    token_fields = ", ".join(_column(m.GatewayToken, f) for f in GATEWAY_TOKEN_FIELDS)
    return {
        "versions": f"SELECT {_column(m.StateVersion, 'value')}, {_column(m.StateVersion, 'live')} "
        f'FROM "{m.StateVersion._meta.db_table}" WHERE {_column(m.StateVersion, "id")} = 1',
        "live": _live_sql(),
        "spend": f"SELECT {_column(m.RungSpend, 'rung')}, {_column(m.RungSpend, 'spent_usd')} "
        f'FROM "{m.RungSpend._meta.db_table}" WHERE {_column(m.RungSpend, "period")} = %s '
        f"AND {_column(m.RungSpend, 'period_start')} = %s",
        "token": f'SELECT {token_fields} FROM "{m.GatewayToken._meta.db_table}" '
        f"WHERE {_column(m.GatewayToken, 'token_hash')} = %s "
        f"AND {_column(m.GatewayToken, 'revoked_at')} IS NULL",
    }


def _rows(name: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    with db_connection.cursor() as cursor:
        cursor.execute(_hot_sql()[name], params)
        return cursor.fetchall()


GATEWAY_TOKEN_FIELDS = (
    "id",
    "name",
    "token_hash",
    "scope_resolve",
    "scope_report",
    "connection_ids",
    "spend_ceiling_usd",
    "scope_credentials",
    "last_used_at",
)  # in the model's field order: Model.from_db matches a partial row to the fields in that order
TOKEN_CEILING_QUANTUM = Decimal("0.000001")


def gateway_token_by_hash(*, token_hash: str) -> m.GatewayToken | None:
    """The live (unrevoked) token with this digest: only the fields authentication reads are loaded."""
    rows = _rows("token", [token_hash])
    if not rows:
        return None
    db = db_connection.alias
    values = dict(zip(GATEWAY_TOKEN_FIELDS, rows[0], strict=True))
    values["last_used_at"] = _aware(values["last_used_at"])  # SQLite's cursor gives it naive
    # A raw cursor skips the fields' converters: the JSON list comes as text, the ceiling as a number.
    ids = values["connection_ids"]
    values["connection_ids"] = json.loads(ids) if isinstance(ids, str | bytes) else (ids or [])
    ceiling = values["spend_ceiling_usd"]
    if ceiling is not None:
        values["spend_ceiling_usd"] = Decimal(str(ceiling)).quantize(TOKEN_CEILING_QUANTUM)
    return m.GatewayToken.from_db(db, list(GATEWAY_TOKEN_FIELDS), list(values.values()))


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None or timezone.is_aware(moment):
        return moment
    return timezone.make_aware(moment, UTC)


def state_version_get() -> int:
    return state_versions_get()[0]


def state_versions_get() -> tuple[int, int]:
    """The state version and the live version (models.StateVersion), in one query."""
    rows = _rows("versions")
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)


# --- live state: what gateways' reports change at every request ----------------------------------
# A connection's latest reading (with its latches) and its cooldown. Writers stamp the connection
# with the live version they bump (services.bump_live_version); a cached snapshot re-reads the
# connections stamped after it, in one query, and merges them in (snapshot_with_live).

LiveState = tuple["datetime | None", "Reading | None"]  # (cooldown_until, latest reading)


def _table(model: type[models.Model]) -> str:
    return f'"{model._meta.db_table}"'


def _live_sql() -> str:
    """Connections stamped after a live version, with their latest reading's windows: a row per
    window (one with NULLs for a connection without reading or without windows)."""
    c, r, w = m.Connection, m.QuotaReading, m.QuotaWindow
    col = _column
    reading_id, connection_id, fetched_at = (
        f'"latest"."{_name(r, f)}"' for f in ("id", "connection", "fetched_at")
    )
    inner = (
        f'SELECT {reading_id} FROM {_table(r)} "latest" WHERE {connection_id} = {col(c, "id")} '
        f"ORDER BY {fetched_at} DESC, {reading_id} DESC LIMIT 1"
    )
    fields = ", ".join(
        [
            col(c, "id"),
            col(c, "cooldown_until"),
            col(r, "id"),
            col(r, "fetched_at"),
            col(r, "source"),
            col(r, "verifiable"),
            col(r, "observed_overage"),
            col(r, "note"),
            col(w, "name"),
            col(w, "remaining_pct"),
            col(w, "reset_at"),
            col(w, "scope_models"),
            col(w, "latched"),
            col(w, "exhausts_at"),
        ]
    )
    return (
        f"SELECT {fields} FROM {_table(c)} "
        f"LEFT JOIN {_table(r)} ON {col(r, 'id')} = ({inner}) "
        f"LEFT JOIN {_table(w)} ON {col(w, 'reading')} = {col(r, 'id')} "
        f"WHERE {col(c, 'live_seq')} > %s "
        f"ORDER BY {col(c, 'id')}, {col(w, 'position')}, {col(w, 'id')}"
    )


def _json_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bytes):
        value = json.loads(value)
    return tuple(value or ())


def live_state_since(live: int) -> dict[str, LiveState]:
    """Connection id → (cooldown_until, latest reading) of the connections whose live state was
    written after live version ``live``. One query, whatever the number of connections."""
    heads: dict[str, tuple[Any, ...]] = {}
    windows: dict[str, list[Window]] = defaultdict(list)
    for row in _rows("live", [live]):
        cid = row[0]
        if cid not in heads:
            heads[cid] = row[1:8]
        name, remaining_pct, reset_at, scope_models, latched, exhausts_at = row[8:]
        if name is not None:
            windows[cid].append(
                Window(
                    name=name,
                    remaining_pct=float(remaining_pct),
                    reset_at=_aware(reset_at),
                    scope_models=_json_list(scope_models),
                    latched=bool(latched),
                    exhausts_at=_aware(exhausts_at),
                )
            )
    found: dict[str, LiveState] = {}
    for cid, (cooldown_until, reading_id, fetched_at, source, verifiable, overage, note) in heads.items():
        reading = None
        if reading_id is not None:
            reading = Reading(
                fetched_at=_aware(fetched_at) or fetched_at,
                windows=tuple(windows.get(cid, ())),
                source=cast(Source, source),
                verifiable=bool(verifiable),
                observed_overage=cast("Overage | None", overage),
                note=note,
            )
        found[cid] = (_aware(cooldown_until), reading)
    return found


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
    return tuple(
        CatalogEntry(
            provider=row.provider,
            auth_type=row.auth_type,
            billing=cast(Billing, row.billing),
            overage=cast(Overage, row.overage),
            source_url=row.source_url,
            notes=row.notes,
            reviewed_at=row.reviewed_at,
        )
        for row in rows
    )


def model_entries() -> tuple[ModelEntry, ...]:
    rows = m.ModelCatalogEntry.objects.order_by("position", "id").values_list(
        "provider", "model", "input_usd_per_mtok", "output_usd_per_mtok", "free", "categories"
    )
    return tuple(
        ModelEntry(
            provider=provider,
            model=model,
            input_usd_per_mtok=None if input_usd is None else float(input_usd),
            output_usd_per_mtok=None if output_usd is None else float(output_usd),
            free=free,
            categories=tuple(categories or ()),
        )
        for provider, model, input_usd, output_usd, free, categories in rows
    )


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
    window_rows = (
        m.QuotaWindow.objects.filter(reading_id__in=latest_ids)
        .order_by("reading_id", "position", "id")
        .values_list(
            "reading_id", "name", "remaining_pct", "reset_at", "scope_models", "latched", "exhausts_at"
        )
    )
    for reading_id, name, remaining_pct, reset_at, scope_models, latched, exhausts_at in window_rows:
        windows[reading_id].append(
            Window(
                name=name,
                remaining_pct=remaining_pct,
                reset_at=reset_at,
                scope_models=tuple(scope_models or ()),
                latched=latched,
                exhausts_at=exhausts_at,
            )
        )
    reading_rows = m.QuotaReading.objects.filter(id__in=latest_ids).values_list(
        "id", "connection_id", "fetched_at", "source", "verifiable", "observed_overage", "note"
    )
    return {
        connection_id: Reading(
            fetched_at=fetched_at,
            windows=tuple(windows[reading_id]),
            source=cast(Source, source),
            verifiable=verifiable,
            observed_overage=cast("Overage | None", observed_overage),
            note=note,
        )
        for reading_id, connection_id, fetched_at, source, verifiable, observed_overage, note in reading_rows
    }


# The fields of a connection that the domain reads, in connection_from_values' order.
CONNECTION_FIELDS = (
    "id",
    "provider",
    "auth_type",
    "keyless",
    "enabled",
    "disabled_reason",
    "base_url",
    "cooldown_until",
    "overage_override",
    "models",
    "min_poll_interval_s",
    "reserve_pct",
)


def adapter_poll_floor_s(provider: str) -> float | None:
    """The poll floor the provider's adapter declares (ladder.domain's table), as settings override
    it (``LADDER_POLL_FLOOR_S``): read here, where the adapters may not be imported."""
    return provider_poll_floor_s(provider, settings.LADDER_POLL_FLOOR_S)


def connection_poll_floor_s(provider: str, min_poll_interval_s: float | None) -> float | None:
    """The least time between two polls of a connection: the slower of the operator's minimum
    interval and its adapter's floor (DESIGN L5); None when neither holds polls back."""
    return poll_floor_s(min_poll_interval_s, adapter_poll_floor_s(provider))


def connection_poll_floor(*, connection_id: str, now: datetime) -> tuple[datetime, float] | None:
    """When the connection's poll floor (the operator's minimum interval or its adapter's floor) next
    allows a poll, and that floor, while it holds polls back (DESIGN L5); None when a poll may happen now."""
    row = (
        m.Connection.objects.filter(pk=connection_id)
        .values_list("last_polled_at", "min_poll_interval_s", "provider")
        .first()
    )
    if row is None or row[0] is None:
        return None
    floor_s = connection_poll_floor_s(row[2], row[1])
    if floor_s is None:
        return None
    allowed_at = row[0] + timedelta(seconds=floor_s)
    return (allowed_at, floor_s) if allowed_at > now else None


def connection_from_values(
    values: tuple[Any, ...], reading: Reading | None, *, config: LadderConfig
) -> Connection:
    """A row of `values_list(*CONNECTION_FIELDS)` as the domain's connection."""
    cid, provider, auth_type, keyless, enabled = values[:5]
    disabled_reason, base_url, cooldown_until, override, models, min_poll_interval_s, reserve_pct = values[5:]
    return Connection(
        id=cid,
        provider=provider,
        auth_type=auth_type,
        keyless=keyless,
        enabled=enabled,
        disabled_reason=disabled_reason,
        base_url=base_url,
        cooldown_until=cooldown_until,
        overage_override=cast("Overage | None", override),
        models=None if models is None else tuple(models),
        reading=reading,
        poll_interval_s=effective_poll_interval_s(
            config.refresh_interval_s, connection_poll_floor_s(provider, min_poll_interval_s)
        ),
        reserve_pct=reserve_pct,
    )


def spend_usd(*, period: BudgetPeriod, now: datetime) -> dict[str, float]:
    """USD spent per budget rung in the budget period containing now; every budget rung present ($0 when
    none). One query on the spend counters (services.spend), whatever the volume of usage."""
    start, _ = period_bounds(now, period)
    spend = dict.fromkeys(BUDGET_RUNGS, 0.0)
    for rung, spent in _rows("spend", [period, db_connection.ops.adapt_datetimefield_value(start)]):
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


# --- the escalation log (ladder.services.escalations writes it) ------------------------------


def escalations_list(
    *, auto_id: str | None = None, since: datetime | None = None, limit: int = 100
) -> list[m.EscalationEvent]:
    """Escalation events oldest first: of one auto id when given, at or after ``since`` when given."""
    events = m.EscalationEvent.objects.all()
    if auto_id is not None:
        events = events.filter(auto_id=auto_id)
    if since is not None:
        events = events.filter(occurred_at__gte=since)
    return list(events.order_by("occurred_at", "id")[: max(0, limit)])


def escalations_latest(*, auto_id: str | None = None, limit: int = 100) -> list[m.EscalationEvent]:
    """The newest escalation events (of one auto id when given), newest first: the dashboard's timeline."""
    events = m.EscalationEvent.objects.all()
    if auto_id is not None:
        events = events.filter(auto_id=auto_id)
    return list(events.order_by("-occurred_at", "-id")[: max(0, limit)])


def escalation_auto_ids() -> list[str]:
    """Every auto id the escalation log holds events of, sorted."""
    return list(m.EscalationEvent.objects.order_by("auto_id").values_list("auto_id", flat=True).distinct())


def escalation_counts() -> dict[tuple[str, str], int]:
    """(auto id, kind) → how many escalation events were ever logged: those stored and those the purge
    deleted (EscalationTally). One query."""
    stored = m.EscalationEvent.objects.values("auto_id", "kind").annotate(total=Count("id")).order_by()
    purged = m.EscalationTally.objects.values("auto_id", "kind").annotate(total=F("purged")).order_by()
    counts: dict[tuple[str, str], int] = {}
    for row in stored.union(purged, all=True):
        key = (row["auto_id"], row["kind"])
        counts[key] = counts.get(key, 0) + int(row["total"])
    return counts


# --- alerts, as the dashboard shows them (read only; ladder.services write them) ----------------


def alert_episodes_open(*, limit: int = 200) -> list[m.AlertEpisode]:
    """The episodes still open, newest first, with their rules."""
    return list(m.AlertEpisode.objects.filter(closed_at__isnull=True).select_related("rule")[:limit])


def alert_episodes_closed(*, offset: int = 0, limit: int = 50) -> list[m.AlertEpisode]:
    """One page of the closed episodes, most recently closed first (``limit`` + 1 rows are asked for,
    so that the caller knows whether an older page exists)."""
    rows = m.AlertEpisode.objects.filter(closed_at__isnull=False).select_related("rule")
    return list(rows.order_by("-closed_at", "-id")[offset : offset + limit + 1])


def alert_deliveries_recent(*, status: str | None = None, limit: int = 100) -> list[m.AlertDelivery]:
    """The latest deliveries (of one status when given), newest first, with channel and episode."""
    rows = m.AlertDelivery.objects.select_related("channel", "episode__rule")
    if status is not None:
        rows = rows.filter(status=status)
    return list(rows.order_by("-created_at", "-id")[:limit])


def alert_delivery_counts() -> dict[str, int]:
    """How many deliveries each status holds (every status present, 0 when none). One query."""
    counts = dict.fromkeys(m.ALERT_DELIVERY_STATUSES, 0)
    for (_, status), count in alert_delivery_figures().counts.items():
        counts[status] = counts.get(status, 0) + count
    return counts


@dataclass(frozen=True)
class AlertDeliveryFigures:
    """What /metrics reports of the deliveries: the rows by (channel kind, status), and when the
    oldest delivery still pending of each channel kind was created (kinds with none pending: absent)."""

    counts: dict[tuple[str, str], int]
    oldest_pending: dict[str, datetime]


def alert_delivery_figures() -> AlertDeliveryFigures:
    """The deliveries stored, by channel kind and status, with the oldest pending one's creation per
    kind. One query (grouped; the minimum rides along, so the stuck queue costs nothing more)."""
    rows = (
        m.AlertDelivery.objects.values_list("channel__kind", "status")
        .annotate(n=Count("id"), oldest=Min("created_at"))
        .order_by()
    )
    counts: dict[tuple[str, str], int] = {}
    oldest_pending: dict[str, datetime] = {}
    for kind, status, count, oldest in rows:
        counts[(kind, status)] = int(count)
        if status == "pending" and oldest is not None:
            oldest_pending[kind] = oldest
    return AlertDeliveryFigures(counts=counts, oldest_pending=oldest_pending)


def alert_episode_open_counts() -> dict[str, int]:
    """Rule kind → how many episodes are open (kinds with none: absent). One query."""
    rows = (
        m.AlertEpisode.objects.filter(closed_at__isnull=True)
        .values_list("rule__kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {kind: int(count) for kind, count in rows}


def alert_channels_all() -> list[m.AlertChannel]:
    return list(m.AlertChannel.objects.order_by("name", "id"))


def alert_rules_all() -> list[m.AlertRule]:
    return list(m.AlertRule.objects.order_by("kind", "name", "id").prefetch_related("channels"))


# --- Redis: the counters services keep there (ladder.services.escalations, refresh_metrics) --------
# Never read to resolve a pool: /metrics reads them here. The client is shared with the services
# that write (ladder.services.hotstate re-exports it). Every call times out fast
# (LADDER_HOTSTATE_TIMEOUT_S) and, after a failure, Redis is left alone for OUTAGE_BACKOFF_S, so that
# an outage costs one timeout, not one per request.

OUTAGE_BACKOFF_S = 5.0
_redis_clients: dict[str, redis.Redis] = {}
_redis_clients_lock = threading.Lock()
_redis_down_until: dict[str, float] = {}  # Redis URL → monotonic time before which it is left alone


class HotStateUnavailable(Exception):
    """Redis did not answer in time (or recently failed); the caller does without it."""


def redis_url() -> str:
    return str(settings.LADDER_HOTSTATE_REDIS_URL or settings.REDIS_URL)


def redis_key_prefix() -> str:
    return str(settings.LADDER_HOTSTATE_PREFIX)


def redis_client() -> redis.Redis:
    """A Redis client (one per URL, thread-safe), with LADDER_HOTSTATE_TIMEOUT_S timeouts.

    Raises HotStateUnavailable while a recent failure is being waited out."""
    url = redis_url()
    if time.monotonic() < _redis_down_until.get(url, 0.0):
        raise HotStateUnavailable(f"Redis at {url} failed recently; waiting before trying again")
    timeout_s = float(settings.LADDER_HOTSTATE_TIMEOUT_S)
    with _redis_clients_lock:
        found = _redis_clients.get(url)
        if found is None:
            found = redis.Redis.from_url(
                url,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                retry_on_timeout=False,
                health_check_interval=30,
            )
            _redis_clients[url] = found
    return found


def redis_mark_down(exc: BaseException) -> None:
    _redis_down_until[redis_url()] = time.monotonic() + OUTAGE_BACKOFF_S
    logger.warning("Redis at %s unavailable (%s); doing without it", redis_url(), exc)


def redis_mark_up() -> None:
    """Forget recorded outages (tests, or after an operator restarted Redis)."""
    _redis_down_until.clear()


def _redis_hash(key: str) -> dict[str, str]:
    """A Redis hash, decoded. Raises HotStateUnavailable when Redis is away."""
    try:
        raw = redis_client().hgetall(key)
    except HotStateUnavailable:
        raise
    except (redis.RedisError, OSError) as exc:
        redis_mark_down(exc)
        raise HotStateUnavailable(str(exc)) from exc
    return {
        (name.decode() if isinstance(name, bytes) else str(name)): (
            value.decode() if isinstance(value, bytes) else str(value)
        )
        for name, value in raw.items()
    }


def resolutions_key() -> str:
    return f"{redis_key_prefix()}:metrics:resolutions"


def resolutions_read() -> dict[tuple[str, str], int]:
    """(grouping, outcome) → gateway resolutions counted so far (``ladder_resolutions_total``,
    counted by the escalation log). Raises HotStateUnavailable when Redis is away."""
    counts: dict[tuple[str, str], int] = {}
    for name, value in _redis_hash(resolutions_key()).items():
        grouping, _, outcome = name.partition(":")
        try:
            counts[(grouping, outcome)] = int(value)
        except ValueError:
            logger.warning("escalation log: unreadable resolutions counter %r ignored", name)
    return counts


DURATION_BUCKETS_S: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FAILURE_OUTCOMES: tuple[str, ...] = ("unverifiable", "rate_limited", "auth_failed", "transient", "failed")


def refresh_metrics_key() -> str:
    return f"{redis_key_prefix()}:metrics:refresh"


@dataclass
class ProviderDurations:
    buckets: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS_S) + 1))
    sum_s: float = 0.0
    count: int = 0


@dataclass
class RefreshFigures:
    polls: dict[tuple[str, str], int] = field(default_factory=dict)  # (provider, outcome) → polls
    durations: dict[str, ProviderDurations] = field(default_factory=dict)


def refresh_metrics_read() -> RefreshFigures:
    """The refresh figures the workers keep (ladder.services.refresh_metrics describes the hash).
    Raises HotStateUnavailable when Redis is away."""
    figures = RefreshFigures()
    for name, value in _redis_hash(refresh_metrics_key()).items():
        kind, _, rest = name.partition("|")
        try:
            if kind == "polls":
                provider, _, outcome = rest.rpartition("|")
                figures.polls[(provider, outcome)] = int(value)
            elif kind == "bucket":
                provider, _, index = rest.rpartition("|")
                figures.durations.setdefault(provider, ProviderDurations()).buckets[int(index)] += int(value)
            elif kind == "sum":
                figures.durations.setdefault(rest, ProviderDurations()).sum_s = float(value)
            elif kind == "count":
                figures.durations.setdefault(rest, ProviderDurations()).count = int(value)
        except (ValueError, IndexError):
            logger.warning("refresh metrics: unreadable field %r ignored", name)
    return figures


def credential_summary_of(
    *, stored: bool, owner: str, expires_at: datetime | None, account_id: str
) -> dict[str, Any] | None:
    """What the API says about a connection's credential (API.md): owner, expiry, account; never a
    token. None when no credential is stored."""
    if not stored:
        return None
    return {
        "owner": owner,
        "expires_at": format_utc(expires_at) if expires_at is not None else None,
        "account_id": account_id or None,
    }


def credential_summaries(*, connection_ids: Sequence[str] | None = None) -> dict[str, dict[str, Any] | None]:
    """Each connection's credential summary, in one query (the API's connections answer)."""
    rows = m.Connection.objects.all()
    if connection_ids is not None:
        rows = rows.filter(pk__in=list(connection_ids))
    fields = (
        "id",
        "credential_ciphertext",
        "credential_owner",
        "credential_expires_at",
        "credential_account_id",
    )
    return {
        cid: credential_summary_of(
            stored=bool(ciphertext), owner=owner, expires_at=expires, account_id=account
        )
        for cid, ciphertext, owner, expires, account in rows.values_list(*fields)
    }


# --- alerts (ladder.domain.alerts decides; ladder.services.alerts writes) ----------------------------

BEAT_HEARTBEAT = "beat"  # the Heartbeat row the refresh fan-out stamps (ladder.services.hotstate)


def alert_rules_enabled() -> list[AlertRuleSpec]:
    return [rule.to_domain() for rule in m.AlertRule.objects.filter(enabled=True).order_by("id")]


def alert_episodes_unrecovered() -> list[AlertEpisodeSpec]:
    """The episodes whose recovery is not sent yet (open, or closed within their quiet period)."""
    rows = m.AlertEpisode.objects.filter(recovered_at__isnull=True).values_list(
        "id", "rule_id", "subject", "opened_at", "closed_at"
    )
    return [AlertEpisodeSpec(*row) for row in rows]


def alert_polled_connections(*, refresh_interval_s: float) -> tuple[PolledConnection, ...]:
    """The connections that should be polled — enabled, not keyless, a credential stored, and not
    skipped by the poller (no adapter or no quota endpoint: ``last_poll_error`` "not polled: …") —
    with their latest reading's time and their poll interval. One query."""
    rows = (
        m.Connection.objects.filter(enabled=True, keyless=False)
        .exclude(credential_ciphertext="")
        .exclude(last_poll_error__startswith="not polled:")
        .annotate(last_reading_at=models.Max("readings__fetched_at"))
        .order_by("position", "id")
        .values_list("id", "last_reading_at", "created_at", "provider", "min_poll_interval_s")
    )
    return tuple(
        PolledConnection(
            cid,
            last,
            created,
            max(refresh_interval_s, connection_poll_floor_s(provider, min_poll_interval_s) or 0.0),
        )
        for cid, last, created, provider, min_poll_interval_s in rows
    )


def alert_inputs(*, kinds: Collection[str], now: datetime) -> AlertInputs:
    """What rules of these kinds read, in a few queries whatever the number of connections (only what
    the kinds need is loaded)."""
    loaded = bool(SNAPSHOT_KINDS.intersection(kinds))
    snapshot = snapshot_load(now=now) if loaded else Snapshot()
    polled: tuple[PolledConnection, ...] = ()
    if READINGS_STALE in kinds:
        config = snapshot.config if loaded else configuration_get().to_domain()
        polled = alert_polled_connections(refresh_interval_s=config.refresh_interval_s)
    empty: tuple[EmptyAutoId, ...] = ()
    if AUTO_ID_EMPTY in kinds:
        rows = m.EscalationState.objects.filter(rung__isnull=True).order_by("auto_id")
        empty = tuple(EmptyAutoId(*row) for row in rows.values_list("auto_id", "changed_at"))
    last_beat_at = None
    if BEAT_SILENT in kinds:
        last_beat_at = m.Heartbeat.objects.filter(pk=BEAT_HEARTBEAT).values_list("last_at", flat=True).first()
    return AlertInputs(snapshot=snapshot, polled=polled, empty_auto_ids=empty, last_beat_at=last_beat_at)
