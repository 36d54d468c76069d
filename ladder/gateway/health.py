"""Liveness and readiness (/healthz, /readyz): open, for load balancers and orchestrators."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import redis
from django.conf import settings
from django.http import HttpRequest, JsonResponse

from ladder.domain.timefmt import format_utc
from ladder.gateway import clock
from ladder.gateway.decorators import api_view
from ladder.selectors.health import beat_last_at, database_ping

BEAT_MIN_MAX_AGE_S = 60.0


@api_view(methods=("GET",))
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _failure_text(exc: BaseException) -> str:
    first_line = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"down: {type(exc).__name__}" + (f": {first_line}" if first_line else "")


def _probe(check: Callable[[], object]) -> str:
    try:
        check()
    except Exception as exc:
        return _failure_text(exc)
    return "ok"


def _redis_ping() -> None:
    with redis.Redis.from_url(
        str(settings.REDIS_URL), socket_timeout=0.5, socket_connect_timeout=0.5, retry_on_timeout=False
    ) as client:
        client.ping()


def beat_max_age_s() -> float:
    """How old the last beat tick may be: LADDER_BEAT_MAX_AGE_S, else ten fan-out periods (≥ 60 s)."""
    explicit = float(settings.LADDER_BEAT_MAX_AGE_S or 0)
    if explicit > 0:
        return explicit
    return max(BEAT_MIN_MAX_AGE_S, 10 * float(settings.LADDER_REFRESH_BEAT_S))


def _beat_check(now: datetime) -> str:
    try:
        last_at = beat_last_at()
    except Exception as exc:
        return _failure_text(exc)
    if last_at is None:
        return "never: no beat tick recorded"
    max_age_s = beat_max_age_s()
    age_s = (now - last_at).total_seconds()
    if age_s > max_age_s:
        return f"stale: last tick at {format_utc(last_at)}, {age_s:.0f}s ago (> {max_age_s:g}s)"
    return "ok"


@api_view(methods=("GET",))
def readyz(request: HttpRequest) -> JsonResponse:
    """Database, Redis and the last beat tick. 503 only without a database: the API answers from it."""
    database = _probe(database_ping)
    redis_state = _probe(_redis_ping)
    beat = _beat_check(clock.current_time()) if database == "ok" else "unknown: the database is down"
    if database != "ok":
        status, overall = 503, "unavailable"
    elif redis_state == "ok" and beat == "ok":
        status, overall = 200, "ok"
    else:
        status, overall = 200, "degraded"
    body = {"status": overall, "database": database, "redis": redis_state, "beat": beat}
    return JsonResponse(body, status=status)
