"""The escalation log: each change of the rung an auto id's resolutions start on, newest first."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ladder.dashboard.pages.links import AutoIdLink, preview_url, timeline_url
from ladder.dashboard.wording import duration_words, rung_words
from ladder.domain import AutoIdError
from ladder.domain.autoid import parse_auto_id
from ladder.selectors.escalations import escalation_auto_ids, escalations_latest

TIMELINE_LIMIT = 100
KIND_WORDS = {"up": "climbed", "down": "came back down", "empty": "turned empty"}


@dataclass(frozen=True)
class TimelineEntry:
    occurred_at: datetime
    ago: str
    auto_id: str
    auto_id_url: str
    kind: str
    kind_words: str
    from_label: str
    to_label: str
    from_index: int | None
    to_index: int | None
    why: str


@dataclass
class Timeline:
    now: datetime
    auto_id: str  # "" = every auto id
    error: str
    filters: list[AutoIdLink]
    entries: list[TimelineEntry] = field(default_factory=list)
    limit: int = TIMELINE_LIMIT

    @property
    def truncated(self) -> bool:
        return len(self.entries) >= self.limit


def timeline_build(*, now: datetime, auto_id: str = "") -> Timeline:
    """The escalation log, newest first: each change of the rung an auto id's gateway resolutions start
    on. Two queries."""
    timeline = Timeline(now=now, auto_id=auto_id, error="", filters=[])
    if auto_id:
        try:
            parse_auto_id(auto_id)
        except AutoIdError as exc:
            timeline.error = str(exc)
            return timeline
    timeline.filters = [AutoIdLink(known, timeline_url(known)) for known in escalation_auto_ids()]
    timeline.entries = [
        TimelineEntry(
            occurred_at=event.occurred_at,
            ago=duration_words((now - event.occurred_at).total_seconds()),
            auto_id=event.auto_id,
            auto_id_url=preview_url(event.auto_id),
            kind=event.kind,
            kind_words=KIND_WORDS.get(event.kind, event.kind),
            from_label=rung_words(event.from_rung),
            to_label=rung_words(event.to_rung),
            from_index=event.from_rung,
            to_index=event.to_rung,
            why=event.why,
        )
        for event in escalations_latest(auto_id=auto_id or None, limit=TIMELINE_LIMIT)
    ]
    return timeline
