"""What the ladder keeps in Redis besides the Celery broker: the Redis client of the counters and
logs that live there (the escalation log, the resolution and refresh counters, refresh requests in
flight) and the last beat tick.

The database is the source of truth; nothing here is read to resolve a pool (a resolution reads the
live state from the database: ``selectors.live_state_since``). The client is the selectors' (whose
``/metrics`` reads need it too): every call times out fast (``LADDER_HOTSTATE_TIMEOUT_S``, 0.5 s)
and, after a failure, Redis is left alone for ``selectors.OUTAGE_BACKOFF_S`` so that an outage
costs one timeout, not one per request.

Keys (``LADDER_HOTSTATE_PREFIX``, default ``ladder:hot``), here: ``<prefix>:last_beat_at``, the ISO
time of the last refresh fan-out (``/readyz``); the others are named by the modules that use them.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import redis
from django.utils import timezone

from ladder import models as m
from ladder import selectors
from ladder.selectors import HotStateUnavailable

logger = logging.getLogger(__name__)

BEAT_HEARTBEAT = "beat"

# The Redis client is the selectors' (a read needs it too: /metrics); the writers use these names.
client = selectors.redis_client
key_prefix = selectors.redis_key_prefix
mark_down = selectors.redis_mark_down
mark_up = selectors.redis_mark_up
redis_url = selectors.redis_url


def last_beat_key() -> str:
    return f"{key_prefix()}:last_beat_at"


def available() -> bool:
    """Whether Redis answers a PING now."""
    try:
        return bool(client().ping())
    except (redis.RedisError, HotStateUnavailable, OSError) as exc:
        if not isinstance(exc, HotStateUnavailable):
            mark_down(exc)
        return False


# --- last beat -------------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def last_beat_set(at: datetime) -> bool:
    try:
        client().set(last_beat_key(), _iso(at))
    except HotStateUnavailable:
        return False
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        return False
    return True


def last_beat_get() -> datetime | None:
    """When the refresh fan-out last ran: Redis, else the database's "beat" heartbeat."""
    try:
        value = client().get(last_beat_key())
    except HotStateUnavailable:
        value = None
    except (redis.RedisError, OSError) as exc:
        mark_down(exc)
        value = None
    if value is not None:
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            return _parse(text)
        except ValueError:
            logger.warning("hot state: unreadable last_beat_at %r ignored", text)
    row = m.Heartbeat.objects.filter(pk=BEAT_HEARTBEAT).values_list("last_at", flat=True).first()
    return row


def beat_record(*, now: datetime | None = None) -> datetime:
    """Record a refresh fan-out tick: the "beat" heartbeat row, then Redis's last_beat_at."""
    now = now or timezone.now()
    m.Heartbeat.objects.update_or_create(pk=BEAT_HEARTBEAT, defaults={"last_at": now})
    last_beat_set(now)
    return now
