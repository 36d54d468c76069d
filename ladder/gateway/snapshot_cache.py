"""The gateway's snapshot, cached by state version: one per process, read by every resolution."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ladder import selectors
from ladder.domain.types import Snapshot


@dataclass(frozen=True)
class _CachedSnapshot:
    version: int
    snapshot: Snapshot


class SnapshotCache:
    """The last snapshot of this process, reused while the state version holds, with the spend of the
    current budget period read at every call (usage reports change spend, not the state version).

    Only the inputs are cached (DESIGN L12): every resolution is recomputed from them. Every write
    bumps the version in the transaction that changes its rows, so a load whose version reads the
    same before and after its row queries saw one state; a load that a write overtook is tried again
    (and, after the last try, kept under the earlier version, so that the next request reloads)."""

    LOAD_TRIES = 3

    def __init__(self) -> None:
        self._entry: _CachedSnapshot | None = None

    def get(self, now: datetime) -> Snapshot:
        version = selectors.state_version_get()
        entry = self._entry
        if entry is not None and entry.version == version:
            snapshot = entry.snapshot
            spend = selectors.spend_usd(period=snapshot.config.budget_period, now=now)
            if spend != snapshot.spend_usd:
                snapshot = snapshot.with_spend(spend)  # shares what the snapshot derived so far
                self._entry = _CachedSnapshot(version, snapshot)
            return snapshot
        for attempt in range(1, self.LOAD_TRIES + 1):
            snapshot = selectors.snapshot_load(now=now)
            after = selectors.state_version_get()
            if after == version or attempt == self.LOAD_TRIES:
                break
            version = after
        self._entry = _CachedSnapshot(version, snapshot)
        return snapshot

    def clear(self) -> None:
        self._entry = None


snapshot_cache = SnapshotCache()
