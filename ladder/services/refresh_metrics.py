"""Refresh figures for /metrics, kept in Redis: the polls run in Celery worker processes, and every
web process must report the same totals, so nothing lives in a process's memory.

One hash, ``<hot-state prefix>:metrics:refresh``, holds counters (never reset by the ladder; a
Redis restart resets them, which Prometheus' rate() takes in its stride):

- ``polls|<provider>|<outcome>``: outcomes of ``services.refresh`` (``ok``, ``unverifiable``,
  ``rate_limited``, ``auth_failed``, ``transient``, ``failed``, ``skipped``, ``claim_lost``);
- ``bucket|<provider>|<i>``: polls whose HTTP exchange took at most ``DURATION_BUCKETS_S[i]``
  seconds and more than the bucket before (``i == len(DURATION_BUCKETS_S)``: longer);
- ``sum|<provider>`` and ``count|<provider>``: seconds spent polling, and how many polls were timed.

Written once per batch of outcomes (one MULTI/EXEC pipeline), best effort: with Redis down the
figures of that batch are lost, never the refresh.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ladder.selectors.hotstate import DURATION_BUCKETS_S, redis_client, refresh_metrics_key
from ladder.services.hotstate import tolerated


@dataclass(frozen=True)
class PollRecord:
    provider: str
    outcome: str
    duration_s: float | None  # None: nothing was fetched (skipped)


def refresh_metrics_record(records: Iterable[PollRecord]) -> bool:
    """Add these polls to the shared figures. False (logged) when Redis is away; never raises."""
    counts: Counter[str] = Counter()
    seconds: defaultdict[str, float] = defaultdict(float)
    for record in records:
        counts[f"polls|{record.provider}|{record.outcome}"] += 1
        if record.duration_s is not None:
            duration_s = max(0.0, record.duration_s)
            counts[f"bucket|{record.provider}|{bisect.bisect_left(DURATION_BUCKETS_S, duration_s)}"] += 1
            counts[f"count|{record.provider}"] += 1
            seconds[f"sum|{record.provider}"] += duration_s
    if not counts:
        return True
    key = refresh_metrics_key()
    with tolerated():
        pipe = redis_client().pipeline(transaction=True)
        for name, value in counts.items():
            pipe.hincrby(key, name, value)
        for name, total in seconds.items():
            pipe.hincrbyfloat(key, name, total)
        pipe.execute()
        return True
    return False
