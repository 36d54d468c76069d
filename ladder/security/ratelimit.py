"""Per-token rate limits of the gateway API (API.md: 429 ``rate_limited`` with Retry-After).

A fixed window per key and minute, counted in Redis (one pipelined INCR and EXPIRE: one round trip,
shared by every web process). A fixed window lets a client send up to twice the limit across a
window's edge; the limits are meant to stop a runaway or hostile reporter, not to meter, so that
is accepted for one round trip instead of a sorted set per token.

Limits fail open: when Redis does not answer, the call is allowed (and the outage logged, at most
once a minute), so that a Redis outage never costs the ladder a usage report (the fault tests count
them). After a failure Redis is left alone for OUTAGE_BACKOFF_S, so that an outage costs one
timeout, not one per request.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

OUTAGE_BACKOFF_S = 5.0
OUTAGE_LOG_EVERY_S = 60.0
TIMEOUT_S = 0.25

_clients: dict[str, redis.Redis] = {}
_lock = threading.Lock()
_down_until = 0.0
_last_outage_log = 0.0


def _client() -> redis.Redis:
    url = str(settings.REDIS_URL)
    with _lock:
        found = _clients.get(url)
        if found is None:
            found = redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S, retry_on_timeout=False
            )
            _clients[url] = found
    return found


def _outage(exc: Exception) -> None:
    global _down_until, _last_outage_log
    now = time.monotonic()
    _down_until = now + OUTAGE_BACKOFF_S
    if now - _last_outage_log >= OUTAGE_LOG_EVERY_S:
        _last_outage_log = now
        logger.warning("rate limits not enforced: Redis does not answer (%s); requests are allowed", exc)


def forget_outage() -> None:
    """Try Redis again at the next call (tests, or once an operator restarted it)."""
    global _down_until
    _down_until = 0.0


def rate_limit_hit(*, key: str, limit: int, window_s: int = 60, now: float | None = None) -> int | None:
    """Count one call of `key`; the seconds to wait (Retry-After) when it is past `limit` calls in the
    current window, else None. None too when Redis does not answer (fail open)."""
    if limit <= 0 or time.monotonic() < _down_until:
        return None
    moment = time.time() if now is None else now
    window = int(moment // window_s)
    full_key = f"{settings.LADDER_RATELIMIT_PREFIX}:{key}:{window}"
    try:
        pipe = _client().pipeline(transaction=False)
        pipe.incr(full_key)
        pipe.expire(full_key, window_s + 1)
        count, _ = pipe.execute()
    except (redis.RedisError, OSError) as exc:
        _outage(exc)
        return None
    if int(count) <= limit:
        return None
    return max(1, int((window + 1) * window_s - moment + 0.999))
