"""The escalation log (ladder.services.escalations writes it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, QuerySet

from ladder import models as m


@dataclass(frozen=True, slots=True)
class EscalationRecord:
    """One logged escalation event (rungs by index; None: an empty pool)."""

    id: int
    auto_id: str
    from_rung: int | None
    to_rung: int | None
    kind: str
    why: str
    occurred_at: datetime


def escalations_list(
    *, auto_id: str | None = None, since: datetime | None = None, limit: int = 100
) -> list[EscalationRecord]:
    """Escalation events oldest first: of one auto id when given, at or after ``since`` when given."""
    events = _events_of(auto_id)
    if since is not None:
        events = events.filter(occurred_at__gte=since)
    rows = events.order_by("occurred_at", "id").values_list(*EscalationRecord.__slots__)
    return [EscalationRecord(*row) for row in rows[: max(0, limit)]]


def escalations_latest(*, auto_id: str | None = None, limit: int = 100) -> list[m.EscalationEvent]:
    """The newest escalation events (of one auto id when given), newest first: the dashboard's timeline."""
    return list(_events_of(auto_id).order_by("-occurred_at", "-id")[: max(0, limit)])


def _events_of(auto_id: str | None) -> QuerySet[m.EscalationEvent]:
    """Every escalation event, or those of one auto id."""
    events = m.EscalationEvent.objects.all()
    return events if auto_id is None else events.filter(auto_id=auto_id)


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
