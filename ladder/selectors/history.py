"""A connection's history over a range: its readings' windows, its failures and its usage (the
connection page's chart and tables). Each read is one query, whatever the number of rows it spans."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db.models import Count, Min, Sum

from ladder import models as m
from ladder.domain.types import Rung


class WindowPoint(NamedTuple):
    """One window of one reading, as the chart draws it."""

    reading_id: int
    fetched_at: datetime
    name: str
    remaining_pct: float
    reset_at: datetime | None


def readings_oldest_at(*, connection_id: str, since: datetime, now: datetime) -> datetime | None:
    """When the oldest of the connection's readings fetched from ``since`` to ``now`` was fetched."""
    rows = m.QuotaReading.objects.filter(
        connection_id=connection_id, fetched_at__gte=since, fetched_at__lte=now
    )
    oldest: datetime | None = rows.aggregate(at=Min("fetched_at"))["at"]
    return oldest


def window_points(*, connection_id: str, since: datetime, now: datetime) -> list[WindowPoint]:
    """Every window of the connection's readings fetched from ``since`` to ``now``, oldest first."""
    rows = m.QuotaWindow.objects.filter(
        reading__connection_id=connection_id, reading__fetched_at__gte=since, reading__fetched_at__lte=now
    ).order_by("reading__fetched_at", "reading_id", "position", "id")
    fields = ("reading_id", "reading__fetched_at", "name", "remaining_pct", "reset_at")
    return [WindowPoint(*row) for row in rows.values_list(*fields)]


def cooldowns_since(
    *, connection_id: str, since: datetime, now: datetime, limit: int = 200
) -> list[tuple[datetime, datetime]]:
    """(observed at, cooldown until) of the failures observed by ``now`` whose cooldown ran past
    ``since``, newest first."""
    rows = m.FailureEvent.objects.filter(
        connection_id=connection_id, cooldown_until__gt=since, observed_at__lte=now
    )
    found = rows.order_by("-observed_at", "-id").values_list("observed_at", "cooldown_until")[:limit]
    return [(observed_at, until) for observed_at, until in found if until is not None]


@dataclass(frozen=True, slots=True)
class FailureRow:
    observed_at: datetime
    status: int
    classification: str
    window: str
    cooldown_until: datetime | None
    detail: str
    source: str


def failures_latest(*, connection_id: str, limit: int = 20) -> list[FailureRow]:
    """The connection's latest failures, newest first."""
    rows = m.FailureEvent.objects.filter(connection_id=connection_id).order_by("-observed_at", "-id")
    return [FailureRow(*row) for row in rows.values_list(*FailureRow.__slots__)[:limit]]


@dataclass(frozen=True, slots=True)
class UsageRow:
    occurred_at: datetime
    model: str | None
    input_tokens: int
    output_tokens: int
    rung: Rung | None
    cost_usd: float


def usage_latest(*, connection_id: str, limit: int = 20) -> list[UsageRow]:
    """The connection's latest usage events, newest first."""
    rows = m.UsageEvent.objects.filter(connection_id=connection_id).order_by("-occurred_at", "-id")
    return [
        UsageRow(at, model, tokens_in, tokens_out, None if rung is None else Rung(rung), float(cost))
        for at, model, tokens_in, tokens_out, rung, cost in rows.values_list(*UsageRow.__slots__)[:limit]
    ]


def usage_totals(*, connection_id: str, since: datetime) -> tuple[float, int]:
    """The connection's spend (USD) and request count since ``since``."""
    rows = m.UsageEvent.objects.filter(connection_id=connection_id, occurred_at__gte=since)
    totals = rows.aggregate(total=Sum("cost_usd"), count=Count("id"))
    return float(totals["total"] or 0), int(totals["count"] or 0)
