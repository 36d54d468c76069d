"""Redis outside Celery's broker: a client per URL that times out fast, and a breaker. After a
failure, a URL is left alone for OUTAGE_BACKOFF_S, so that an outage costs one timeout, not one per
request. Each user does without Redis its own way: the hot state skips (the database is the truth),
the API's rate limits allow, the login throttle counts in the process."""

from __future__ import annotations

import functools
import logging
import time

import redis

OUTAGE_BACKOFF_S = 5.0
WARN_EVERY_S = 60.0
REDIS_FAULTS = (redis.RedisError, OSError)

_down_until: dict[str, float] = {}  # URL → monotonic time before which it is left alone
_warned_at: dict[str, float] = {}  # message → monotonic time it was last logged


@functools.cache
def redis_client_for(url: str, *, timeout_s: float) -> redis.Redis:
    """One client per URL and timeout, shared by the threads (a race builds two; one is dropped)."""
    return redis.Redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, health_check_interval=30
    )


def redis_down(url: str) -> bool:
    """Whether a recent failure of `url` is being waited out."""
    return time.monotonic() < _down_until.get(url, 0.0)


def redis_failed(url: str) -> None:
    _down_until[url] = time.monotonic() + OUTAGE_BACKOFF_S


def redis_forget_outages() -> None:
    """Try Redis again at the next call, and say so again (tests, or after an operator restarted it)."""
    _down_until.clear()
    _warned_at.clear()


def warn_now_and_then(log: logging.Logger, message: str, *args: object) -> None:
    """A warning at most once a WARN_EVERY_S per message: an outage must not log every request."""
    now = time.monotonic()
    if now - _warned_at.get(message, -WARN_EVERY_S) >= WARN_EVERY_S:
        _warned_at[message] = now
        log.warning(message, *args)
