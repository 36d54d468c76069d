"""Redis: the counters services keep there (ladder.services.escalations, refresh_metrics).

Never read to resolve a pool: /metrics reads them here. The client is shared with the services
that write (ladder.services.hotstate). Every call times out fast (LADDER_HOTSTATE_TIMEOUT_S) and, after
a failure, Redis is left alone for a while (ladder.security.redis_breaker)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import redis
from django.conf import settings

from ladder.security.redis_breaker import REDIS_FAULTS, redis_client_for, redis_down, redis_failed

logger = logging.getLogger(__name__)


class HotStateUnavailable(Exception):
    """Redis did not answer in time (or recently failed); the caller does without it."""


def redis_url() -> str:
    return str(settings.LADDER_HOTSTATE_REDIS_URL or settings.REDIS_URL)


def redis_key_prefix() -> str:
    return str(settings.LADDER_HOTSTATE_PREFIX)


def redis_client() -> redis.Redis:
    """A Redis client with LADDER_HOTSTATE_TIMEOUT_S timeouts. Raises HotStateUnavailable while a
    recent failure is being waited out."""
    url = redis_url()
    if redis_down(url):
        raise HotStateUnavailable(f"Redis at {url} failed recently; waiting before trying again")
    return redis_client_for(url, timeout_s=float(settings.LADDER_HOTSTATE_TIMEOUT_S))


def redis_mark_down(exc: BaseException) -> None:
    redis_failed(redis_url())
    logger.warning("Redis at %s unavailable (%s); doing without it", redis_url(), exc)


def _redis_hash(key: str) -> dict[str, str]:
    """A Redis hash, decoded. Raises HotStateUnavailable when Redis is away."""
    try:
        raw = redis_client().hgetall(key)
    except REDIS_FAULTS as exc:
        redis_mark_down(exc)
        raise HotStateUnavailable(str(exc)) from exc
    return {_text(name): _text(value) for name, value in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def resolutions_key() -> str:
    return f"{redis_key_prefix()}:metrics:resolutions"


def resolutions_read() -> dict[tuple[str, str], int]:
    """(grouping, outcome) → gateway resolutions counted so far (``ladder_resolutions_total``,
    counted by the escalation log). Raises HotStateUnavailable when Redis is away."""
    counts: dict[tuple[str, str], int] = {}
    for name, value in _redis_hash(resolutions_key()).items():
        grouping, _, outcome = name.partition(":")
        try:
            counts[(grouping, outcome)] = int(value)
        except ValueError:
            logger.warning("escalation log: unreadable resolutions counter %r ignored", name)
    return counts


DURATION_BUCKETS_S: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
FAILURE_OUTCOMES: tuple[str, ...] = ("unverifiable", "rate_limited", "auth_failed", "transient", "failed")


def refresh_metrics_key() -> str:
    return f"{redis_key_prefix()}:metrics:refresh"


@dataclass
class ProviderDurations:
    buckets: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS_S) + 1))
    sum_s: float = 0.0
    count: int = 0


@dataclass
class RefreshFigures:
    polls: dict[tuple[str, str], int] = field(default_factory=dict)  # (provider, outcome) → polls
    durations: dict[str, ProviderDurations] = field(default_factory=dict)


def refresh_metrics_read() -> RefreshFigures:
    """The refresh figures the workers keep (ladder.services.refresh_metrics describes the hash).
    Raises HotStateUnavailable when Redis is away."""
    figures = RefreshFigures()
    for name, value in _redis_hash(refresh_metrics_key()).items():
        kind, _, rest = name.partition("|")
        try:
            if kind == "polls":
                provider, _, outcome = rest.rpartition("|")
                figures.polls[(provider, outcome)] = int(value)
            elif kind == "bucket":
                provider, _, index = rest.rpartition("|")
                figures.durations.setdefault(provider, ProviderDurations()).buckets[int(index)] += int(value)
            elif kind == "sum":
                figures.durations.setdefault(rest, ProviderDurations()).sum_s = float(value)
            elif kind == "count":
                figures.durations.setdefault(rest, ProviderDurations()).count = int(value)
        except (ValueError, IndexError):
            logger.warning("refresh metrics: unreadable field %r ignored", name)
    return figures
