"""The gateway's snapshot, cached by the state and live versions: one per process, for every resolution."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ladder.domain.types import Snapshot
from ladder.selectors.snapshot import (
    live_state_since,
    snapshot_load,
    snapshot_with_live,
    spend_usd,
    state_versions_get,
)


@dataclass(frozen=True)
class _CachedSnapshot:
    version: int
    live: int
    snapshot: Snapshot


class SnapshotCache:
    """The last snapshot of this process, split by how often its parts change:

    - configuration, catalogs and connections: reloaded whole (snapshot_load) when the state version
      changes, that is when an operator or an import changes them, or a connection is disabled;
    - each connection's live state (latest reading with its latches, cooldown), which a gateway's
      reports change at every request: when the live version moved, only the connections written
      since are re-read (one query: ladder.selectors.snapshot.live_state_since) and merged in;
    - the spend of the current budget period: read at every call (usage reports change it).

    Only the inputs are cached (DESIGN L12): every resolution is recomputed from them. Every write
    bumps its counter in the transaction that changes its rows, and the counters are read before the
    rows, so a resolution never uses a row older than what a write committed before it started. A
    full load whose state version a write overtook is tried again (and, after the last try, kept
    under the earlier version, so that the next request reloads)."""

    LOAD_TRIES = 3

    def __init__(self) -> None:
        self._entry: _CachedSnapshot | None = None

    def get(self, now: datetime) -> Snapshot:
        version, live = state_versions_get()
        entry = self._held(version, live)
        if entry is not None:
            snapshot = entry.snapshot
            changed = live_state_since(entry.live) if live != entry.live else {}
            # A live write to a connection the snapshot does not hold (created without a version
            # bump, e.g. by a script) cannot be merged: the whole state is loaded again instead.
            if all(cid in snapshot.connections_by_id for cid in changed):
                if changed:
                    snapshot = snapshot_with_live(snapshot, changed)
                spend = spend_usd(period=snapshot.config.budget_period, now=now)
                if spend != snapshot.spend_usd:
                    snapshot = snapshot.with_spend(spend)  # shares what the snapshot derived so far
                if snapshot is not entry.snapshot or live != entry.live:
                    self._entry = _CachedSnapshot(version, live, snapshot)
                return snapshot
        return self._load(version, live, now)

    def get_fixed(self, now: datetime) -> Snapshot:
        """The snapshot for a reader of its configuration, catalogs and connections' fixed fields
        only (usage pricing): loaded as by get() when the state version moved, else the cached one
        as it is, with its connections' live state and its spend as last read. One query (the
        versions) while the state version holds; the next get() still merges what was skipped."""
        version, live = state_versions_get()
        entry = self._held(version, live)
        return entry.snapshot if entry is not None else self._load(version, live, now)

    def _held(self, version: int, live: int) -> _CachedSnapshot | None:
        """The cached entry while it is of this state version; None when the state must be loaded
        (a live version that went back, a database replaced under the process, reloads too)."""
        entry = self._entry
        if entry is not None and entry.version == version and entry.live <= live:
            return entry
        return None

    def _load(self, version: int, live: int, now: datetime) -> Snapshot:
        for attempt in range(1, self.LOAD_TRIES + 1):
            snapshot = snapshot_load(now=now)
            after, after_live = state_versions_get()
            if after == version or attempt == self.LOAD_TRIES:
                break
            version, live = after, after_live
        # Live writes that landed during the load are read again by the next call (their numbers
        # are above `live`, read before the load).
        self._entry = _CachedSnapshot(version, live, snapshot)
        return snapshot

    def clear(self) -> None:
        self._entry = None


snapshot_cache = SnapshotCache()
