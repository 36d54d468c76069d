"""What the ladder keeps in Redis besides the Celery broker: the Redis client of the counters and
logs that live there (the escalation log, the resolution and refresh counters, refresh requests in
flight); and the record of the last beat tick, which lives in the database (``/readyz`` reads it).

The database is the source of truth; nothing here is read to resolve a pool (a resolution reads the
live state from the database: ``ladder.selectors.snapshot.live_state_since``). The client is the
selectors' (whose ``/metrics`` reads need it too): every call times out fast
(``LADDER_HOTSTATE_TIMEOUT_S``, 0.5 s) and, after a failure, Redis is left alone for a while
(``ladder.security.redis_breaker``) so that an outage costs one timeout, not one per request.

Keys (``LADDER_HOTSTATE_PREFIX``, default ``ladder:hot``) are named by the modules that use them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from datetime import datetime

import redis
from django.utils import timezone

from ladder import models as m
from ladder.security.redis_breaker import redis_forget_outages
from ladder.selectors.hotstate import (
    HotStateUnavailable,
    redis_client,
    redis_key_prefix,
    redis_mark_down,
    redis_url,
)

logger = logging.getLogger(__name__)

BEAT_HEARTBEAT = "beat"

# The Redis client is the selectors' (a read needs it too: /metrics); the writers use these names.
client = redis_client
key_prefix = redis_key_prefix
mark_down = redis_mark_down
mark_up = redis_forget_outages
redis_url = redis_url

__all__ = ["HotStateUnavailable", "beat_record", "client", "key_prefix", "mark_down", "mark_up", "redis_url"]


def beat_record(*, now: datetime | None = None) -> datetime:
    """Record a refresh fan-out tick: the "beat" heartbeat row."""
    now = now or timezone.now()
    m.Heartbeat.objects.update_or_create(pk=BEAT_HEARTBEAT, defaults={"last_at": now})
    return now


@contextlib.contextmanager
def tolerated() -> Iterator[None]:
    """Do without Redis: a failure (recorded, so that Redis is left alone for a while) or a recent
    outage ends the block quietly, and the caller carries on with its answer for "unknown"."""
    try:
        yield
    except HotStateUnavailable:
        pass
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
