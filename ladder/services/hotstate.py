"""What the ladder keeps in Redis besides the Celery broker: the Redis client of the counters and
logs that live there (the escalation log, the resolution and refresh counters, refresh requests in
flight) and the last beat tick.

The database is the source of truth; nothing here is read to resolve a pool (a resolution reads the
live state from the database: ``selectors.live_state_since``). Every call times out fast
(``LADDER_HOTSTATE_TIMEOUT_S``, 0.5 s) and, after a failure, Redis is left alone for
``OUTAGE_BACKOFF_S`` so that an outage costs one timeout, not one per request.

Keys (``LADDER_HOTSTATE_PREFIX``, default ``ladder:hot``), here: ``<prefix>:last_beat_at``, the ISO
time of the last refresh fan-out (``/readyz``); the others are named by the modules that use them.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.utils import timezone

from ladder import models as m

logger = logging.getLogger(__name__)

OUTAGE_BACKOFF_S = 5.0
BEAT_HEARTBEAT = "beat"

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()
_down_until: dict[str, float] = {}  # Redis URL → monotonic time before which it is left alone


class HotStateUnavailable(Exception):
    """Redis did not answer in time (or recently failed); the caller falls back to the database."""


def redis_url() -> str:
    return str(settings.LADDER_HOTSTATE_REDIS_URL or settings.REDIS_URL)


def key_prefix() -> str:
    return str(settings.LADDER_HOTSTATE_PREFIX)


def last_beat_key() -> str:
    return f"{key_prefix()}:last_beat_at"


def client() -> redis.Redis:
    """A Redis client for the hot state (one per URL, thread-safe), with 0.5 s timeouts.

    Raises HotStateUnavailable while a recent failure is being waited out."""
    url = redis_url()
    if time.monotonic() < _down_until.get(url, 0.0):
        raise HotStateUnavailable(f"Redis at {url} failed recently; waiting before trying again")
    timeout_s = float(settings.LADDER_HOTSTATE_TIMEOUT_S)
    with _clients_lock:
        found = _clients.get(url)
        if found is None:
            found = redis.Redis.from_url(
                url,
                socket_timeout=timeout_s,
                socket_connect_timeout=timeout_s,
                retry_on_timeout=False,
                health_check_interval=30,
            )
            _clients[url] = found
    return found


def mark_down(exc: BaseException) -> None:
    _down_until[redis_url()] = time.monotonic() + OUTAGE_BACKOFF_S
    logger.warning("hot state: Redis at %s unavailable (%s); using the database", redis_url(), exc)


def mark_up() -> None:
    """Forget recorded outages (tests, or after an operator restarted Redis)."""
    _down_until.clear()


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
