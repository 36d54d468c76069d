"""Rate limits counted in Redis (``REDIS_URL``, under ``LADDER_RATELIMIT_PREFIX``), shared by every
web process: the gateway token's reports and credential calls (API.md: 429 ``rate_limited`` with
Retry-After), and the failed logins (ladder.security.login_throttle).

A fixed window per key, opened by its first hit (the `limits` library: one INCR-and-EXPIRE script,
one round trip). A fixed window lets a client send up to twice the limit across a window's edge; the
limits are meant to stop a runaway or hostile client, not to meter, so that is accepted for one round
trip instead of a sorted set per key.

The API's limits fail open: when Redis does not answer, the call is allowed (and the outage logged,
at most once a minute), so that a Redis outage never costs the ladder a usage report (the fault tests
count them). Redis is then left alone for a while (ladder.security.redis_breaker).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from limits import RateLimitItemPerSecond
from limits.storage import RedisStorage
from limits.strategies import FixedWindowRateLimiter

from ladder.security.redis_breaker import (
    REDIS_FAULTS,
    redis_client_for,
    redis_down,
    redis_failed,
    warn_now_and_then,
)

logger = logging.getLogger(__name__)

TIMEOUT_S = 0.25
T = TypeVar("T")


@functools.cache
def _limiter(url: str, prefix: str) -> FixedWindowRateLimiter:
    pool = redis_client_for(url, timeout_s=TIMEOUT_S).connection_pool
    return FixedWindowRateLimiter(RedisStorage(url, connection_pool=pool, key_prefix=prefix))


def with_shared_limits(count: Callable[[FixedWindowRateLimiter], T], *, without: Callable[[], T]) -> T:
    """`count` on the counts in Redis; `without()` when Redis does not answer."""
    url = str(settings.REDIS_URL)
    if not redis_down(url):
        try:
            return count(_limiter(url, str(settings.LADDER_RATELIMIT_PREFIX)))
        except REDIS_FAULTS:
            redis_failed(url)
    return without()


def window_left_s(limiter: FixedWindowRateLimiter, item: RateLimitItemPerSecond, *key: str) -> int:
    """Whole seconds until the window of `key` ends (at least 1): a Retry-After."""
    return max(1, math.ceil(limiter.get_window_stats(item, *key).reset_time - time.time()))


def rate_limit_hit(*, key: str, limit: int, window_s: int = 60) -> int | None:
    """Count one call of `key`; the seconds to wait (Retry-After) when it is past `limit` calls in its
    window, else None. None too when Redis does not answer (fail open)."""
    if limit <= 0:
        return None
    item = RateLimitItemPerSecond(limit, window_s)

    def hit(limiter: FixedWindowRateLimiter) -> int | None:
        return None if limiter.hit(item, key) else window_left_s(limiter, item, key)

    return with_shared_limits(hit, without=_fail_open)


def _fail_open() -> None:
    warn_now_and_then(logger, "rate limits not enforced: Redis does not answer; requests are allowed")
