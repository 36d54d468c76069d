"""The connection page: its card, chart, credential, recent failures and usage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min, Sum

from ladder import models as m
from ladder.dashboard.chart import (
    CHART_AUTO_LOOKBACK,
    CHART_RANGES,
    Chart,
    WindowPoint,
    chart_build,
    chart_range_auto,
)
from ladder.dashboard.pages.overview import ConnectionCard, connection_card, overview_from_snapshot
from ladder.domain import Connection, Rung, classify_billing
from ladder.domain.credentials import (
    NEEDS_REAUTH,
    REFRESHABLE_KINDS,
    connection_kind,
    default_owner,
    expires_in_text,
)
from ladder.domain.types import LadderConfig
from ladder.domain.windows import connection_limits
from ladder.selectors.snapshot import snapshot_load


@dataclass(frozen=True)
class FailureRow:
    observed_at: datetime
    status: int
    classification: str
    window: str
    cooldown_until: datetime | None
    detail: str
    source: str


@dataclass(frozen=True)
class UsageRow:
    occurred_at: datetime
    model: str
    input_tokens: int
    output_tokens: int
    rung: str
    cost_usd: float


@dataclass(frozen=True)
class CredentialView:
    """What the page tells about the credential: never the secret."""

    stored: bool
    owner: str
    expires: str  # "expires in 3 h", "expired 5 min ago", "expiry unknown"
    account: str
    needs_reauth: bool
    file_kind: str | None  # the kind whose CLI file can be pasted here, None: a plain key
    owner_required: bool  # a rotating kind: the form asks who refreshes


def credential_view(row: m.Connection, now: datetime) -> CredentialView:
    kind = connection_kind(row)
    return CredentialView(
        stored=row.has_credential,
        owner=row.credential_owner,
        expires=expires_in_text(row.credential_expires_at, now),
        account=row.credential_account_id,
        needs_reauth=row.disabled_reason == NEEDS_REAUTH,
        file_kind=kind if kind in REFRESHABLE_KINDS else None,
        owner_required=default_owner(kind) is None,
    )


@dataclass
class ConnectionPage:
    card: ConnectionCard
    row: m.Connection
    chart: Chart
    failures: list[FailureRow]
    usage: list[UsageRow]
    usage_24h_usd: float
    usage_24h_count: int
    last_poll_error: str
    last_polled_at: datetime | None
    next_refresh_at: datetime | None
    credential: CredentialView


USAGE_SPAN = timedelta(hours=24)
CHART_COOLDOWNS_MAX = 200


def _chart_of(connection: Connection, config: LadderConfig, now: datetime, chart_range: str | None) -> Chart:
    """The chart over ``chart_range``, or over the smallest automatic range that holds the last 24
    hours' readings (one more query). One query for the windows' values, one for the cooldowns."""
    readings = m.QuotaReading.objects.filter(connection_id=connection.id, fetched_at__lte=now)
    if chart_range is None:
        oldest = readings.filter(fetched_at__gte=now - CHART_AUTO_LOOKBACK).aggregate(at=Min("fetched_at"))
        range_key = chart_range_auto(oldest["at"], now)
    else:
        range_key = chart_range
    start = now - CHART_RANGES[range_key][0]
    rows = (
        m.QuotaWindow.objects.filter(
            reading__connection_id=connection.id, reading__fetched_at__gte=start, reading__fetched_at__lte=now
        )
        .order_by("reading__fetched_at", "reading_id", "position", "id")
        .values_list("reading_id", "reading__fetched_at", "name", "remaining_pct", "reset_at")
    )
    failures = list(
        m.FailureEvent.objects.filter(
            connection_id=connection.id, cooldown_until__gt=start, observed_at__lte=now
        ).order_by("-observed_at", "-id")[:CHART_COOLDOWNS_MAX]
    )
    forecasts = {}
    if connection.reading is not None:
        forecasts = {w.name: w.exhausts_at for w in connection.reading.windows if w.exhausts_at is not None}
    return chart_build(
        [WindowPoint(*row) for row in rows],
        failures,
        connection.cooldown_until,
        connection_limits(connection, config),
        now,
        range_key=range_key,
        range_chosen=chart_range is not None,
        exhausts_at=forecasts,
    )


def connection_page_build(
    *, connection_id: str, now: datetime, chart_range: str | None = None
) -> ConnectionPage | None:
    """The connection page; ``chart_range`` is one of ``chart.CHART_RANGES`` (None: the smallest that
    holds the last 24 hours' readings)."""
    snapshot = snapshot_load(now=now)
    connection = snapshot.connections_by_id.get(connection_id)
    row = m.Connection.objects.filter(pk=connection_id).first()
    if connection is None or row is None:
        return None
    config = snapshot.config
    verdict = classify_billing(connection, snapshot.catalog_by_key)
    card = connection_card(connection, verdict, config, now, quota=True)
    overview = overview_from_snapshot(snapshot, now=now, only=connection_id)
    for column in overview.rungs:
        for other in column.cards:
            if other.id == connection_id:
                card.models.extend(f"{model} (rung {column.rung.label})" for model in other.models)
                card.pools.extend(other.pools)
    chart = _chart_of(connection, config, now, chart_range)
    failures = list(
        m.FailureEvent.objects.filter(connection_id=connection_id).order_by("-observed_at", "-id")[:20]
    )
    start = now - USAGE_SPAN
    usage_rows = list(
        m.UsageEvent.objects.filter(connection_id=connection_id).order_by("-occurred_at", "-id")[:20]
    )
    totals = m.UsageEvent.objects.filter(connection_id=connection_id, occurred_at__gte=start).aggregate(
        total=Sum("cost_usd"), count=Count("id")
    )
    rung_labels = {int(r): r.label for r in Rung}
    return ConnectionPage(
        card=card,
        row=row,
        chart=chart,
        failures=[
            FailureRow(
                f.observed_at, f.status, f.classification, f.window, f.cooldown_until, f.detail, f.source
            )
            for f in failures
        ],
        usage=[
            UsageRow(
                u.occurred_at,
                u.model or "",
                u.input_tokens,
                u.output_tokens,
                rung_labels.get(u.rung, "—") if u.rung is not None else "—",
                float(u.cost_usd),
            )
            for u in usage_rows
        ],
        usage_24h_usd=float(totals["total"] or 0),
        usage_24h_count=int(totals["count"] or 0),
        last_poll_error=row.last_poll_error,
        last_polled_at=row.last_polled_at,
        next_refresh_at=row.next_refresh_at,
        credential=credential_view(row, now),
    )
