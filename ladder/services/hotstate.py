"""What the ladder keeps in Redis besides the Celery broker (the escalation log, the resolution and
refresh counters, refresh requests in flight): ``tolerated``, the way every writer does without
Redis; and the record of the last beat tick, which lives in the database (``/readyz`` reads it).

The database is the source of truth; nothing here is read to resolve a pool (a resolution reads the
live state from the database: ``ladder.selectors.snapshot.live_state_since``). The writers use the
selectors' client (``ladder.selectors.hotstate.redis_client``, which ``/metrics`` reads need too):
every call times out fast
(``LADDER_HOTSTATE_TIMEOUT_S``, 0.5 s) and, after a failure, Redis is left alone for a while
(``ladder.security.redis_breaker``) so that an outage costs one timeout, not one per request.

Keys (``LADDER_HOTSTATE_PREFIX``, default ``ladder:hot``) are named by the modules that use them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime

import redis

from ladder import models as m
from ladder.selectors.health import BEAT_HEARTBEAT
from ladder.selectors.hotstate import HotStateUnavailable, redis_mark_down


def beat_record(*, now: datetime) -> None:
    """Record a refresh fan-out tick: the "beat" heartbeat row."""
    m.Heartbeat.objects.update_or_create(pk=BEAT_HEARTBEAT, defaults={"last_at": now})


@contextlib.contextmanager
def tolerated() -> Iterator[None]:
    """Do without Redis: a failure (recorded, so that Redis is left alone for a while) or a recent
    outage ends the block quietly, and the caller carries on with its answer for "unknown"."""
    with contextlib.suppress(HotStateUnavailable):
        try:
            yield
        except (redis.RedisError, OSError) as exc:
            redis_mark_down(exc)
