"""The connection page: its card, chart, credential, recent failures and usage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ladder.dashboard.chart import CHART_AUTO_LOOKBACK, CHART_RANGES, Chart, chart_build, chart_range_auto
from ladder.dashboard.pages.overview import ConnectionCard, connection_card, overview_from_snapshot
from ladder.domain import Connection, classify_billing
from ladder.domain.credentials import (
    NEEDS_REAUTH,
    REFRESHABLE_KINDS,
    connection_kind,
    default_owner,
    expires_in_text,
)
from ladder.domain.types import LadderConfig
from ladder.domain.windows import connection_limits
from ladder.selectors.connections import ConnectionDetails, connection_details
from ladder.selectors.history import (
    FailureRow,
    UsageRow,
    cooldowns_since,
    failures_latest,
    readings_oldest_at,
    usage_latest,
    usage_totals,
    window_points,
)
from ladder.selectors.snapshot import snapshot_load


@dataclass(frozen=True)
class CredentialView:
    """What the page tells about the credential beside its stored owner and account (the page's
    details): never the secret."""

    expires: str  # "expires in 3 h", "expired 5 min ago", "expiry unknown"
    needs_reauth: bool
    file_kind: str | None  # the kind whose CLI file can be pasted here, None: a plain key
    owner_required: bool  # a rotating kind: the form asks who refreshes


def credential_view(connection: Connection, details: ConnectionDetails, now: datetime) -> CredentialView:
    kind = connection_kind(connection)
    return CredentialView(
        expires=expires_in_text(details.credential_expires_at, now),
        needs_reauth=connection.disabled_reason == NEEDS_REAUTH,
        file_kind=kind if kind in REFRESHABLE_KINDS else None,
        owner_required=default_owner(kind) is None,
    )


@dataclass
class ConnectionPage:
    card: ConnectionCard
    details: ConnectionDetails
    chart: Chart
    failures: list[FailureRow]
    usage: list[UsageRow]
    usage_24h_usd: float
    usage_24h_count: int
    credential: CredentialView


USAGE_SPAN = timedelta(hours=24)


def _chart_of(connection: Connection, config: LadderConfig, now: datetime, chart_range: str | None) -> Chart:
    """The chart over ``chart_range``, or over the smallest automatic range that holds the last 24
    hours' readings (one more query). One query for the windows' values, one for the cooldowns."""
    range_key = chart_range or chart_range_auto(
        readings_oldest_at(connection_id=connection.id, since=now - CHART_AUTO_LOOKBACK, now=now), now
    )
    start = now - CHART_RANGES[range_key][0]
    windows = connection.reading.windows if connection.reading is not None else ()
    forecasts = {w.name: w.exhausts_at for w in windows if w.exhausts_at is not None}
    return chart_build(
        window_points(connection_id=connection.id, since=start, now=now),
        cooldowns_since(connection_id=connection.id, since=start, now=now),
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
    details = connection_details(connection_id=connection_id)
    if connection is None or details is None:
        return None
    config = snapshot.config
    verdict = classify_billing(connection, snapshot.catalog_by_key)
    card = connection_card(connection, verdict, config, now, quota=True)
    overview = overview_from_snapshot(snapshot, now=now, only=connection_id)
    for column in overview.rungs:
        for other in column.cards:  # each of them this connection's
            card.models.extend(f"{model} (rung {column.rung.label})" for model in other.models)
            card.pools.extend(other.pools)
    usage_24h_usd, usage_24h_count = usage_totals(connection_id=connection_id, since=now - USAGE_SPAN)
    return ConnectionPage(
        card=card,
        details=details,
        chart=_chart_of(connection, config, now, chart_range),
        failures=failures_latest(connection_id=connection_id),
        usage=usage_latest(connection_id=connection_id),
        usage_24h_usd=usage_24h_usd,
        usage_24h_count=usage_24h_count,
        credential=credential_view(connection, details, now),
    )
