"""The pool preview: what an auto id resolves to now, and why each candidate is left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ladder.dashboard.pages.links import AutoIdLink, auto_id_links
from ladder.dashboard.wording import reason_words, until_words
from ladder.domain import AutoIdError, Candidate, resolve
from ladder.selectors.snapshot import snapshot_load

PREVIEW_DEFAULT = "auto/subscription"


@dataclass(frozen=True)
class PreviewEntry:
    position: int
    rung: str
    rung_index: int
    provider: str
    model: str
    connection_ids: tuple[str, ...]


@dataclass(frozen=True)
class PreviewExclusion:
    provider: str
    model: str
    connection_id: str
    rung: str
    reason: str
    reason_words: str
    detail: str


@dataclass
class Preview:
    auto_id: str
    error: str
    now: datetime
    auto_ids: list[AutoIdLink]
    pool: list[PreviewEntry] = field(default_factory=list)
    excluded: list[PreviewExclusion] = field(default_factory=list)
    empty_code: str = ""
    empty_message: str = ""
    retry_at: datetime | None = None
    retry_in: str = ""
    refresh: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.error and not self.pool


def preview_build(*, auto_id: str, now: datetime, candidates: list[Candidate] | None = None) -> Preview:
    snapshot = snapshot_load(now=now)
    preview = Preview(auto_id=auto_id, error="", now=now, auto_ids=auto_id_links(snapshot))
    try:
        resolution = resolve(snapshot, auto_id, candidates, now)
    except AutoIdError as exc:
        preview.error = str(exc)
        return preview
    preview.pool = [
        PreviewEntry(i, e.rung.label, int(e.rung), e.provider, e.model, e.allowed_connection_ids)
        for i, e in enumerate(resolution.pool, start=1)
    ]
    reserves = {c.id: c.reserve_pct for c in snapshot.connections}  # an unknown connection has none
    preview.excluded = [
        PreviewExclusion(
            x.provider,
            x.model,
            x.connection_id,
            x.rung.label if x.rung is not None else "—",
            x.reason,
            reason_words(x.reason, reserve_pct=reserves.get(x.connection_id)),
            x.detail,
        )
        for x in resolution.excluded
    ]
    if resolution.empty is not None:
        preview.empty_code = resolution.empty.code
        preview.empty_message = resolution.empty.message
        preview.retry_at = resolution.empty.retry_at
        preview.retry_in = until_words(resolution.empty.retry_at, now) if resolution.empty.retry_at else ""
    preview.refresh = resolution.refresh
    return preview
