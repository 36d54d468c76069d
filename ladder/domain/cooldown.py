"""L7: cooldowns after failures, clamped to the upstream reset."""

from __future__ import annotations

from datetime import datetime, timedelta

QUOTA_BACKOFF_BASE_S = 60.0
QUOTA_BACKOFF_CAP_S = 7 * 24 * 3600.0
TRANSIENT_BACKOFF_BASE_S = 5.0
TRANSIENT_BACKOFF_CAP_S = 300.0


def _backoff_s(level: int, base_s: float, cap_s: float) -> float:
    """base_s × 2^level, capped at cap_s."""
    if level >= 20:  # both backoffs are far past their cap; avoid huge integers
        return cap_s
    return min(base_s * 2 ** max(level, 0), cap_s)


def quota_backoff_s(level: int) -> float:
    """60 s × 2^level, capped at 7 days."""
    return _backoff_s(level, QUOTA_BACKOFF_BASE_S, QUOTA_BACKOFF_CAP_S)


def transient_backoff_s(level: int) -> float:
    """5 s × 2^level, capped at 300 s."""
    return _backoff_s(level, TRANSIENT_BACKOFF_BASE_S, TRANSIENT_BACKOFF_CAP_S)


def _wait_s(retry_after_s: float | None, backoff_s: float) -> float:
    """An upstream Retry-After, capped at the longest backoff (7 days); the backoff when it is absent
    or nonsense."""
    if retry_after_s is None or retry_after_s != retry_after_s or retry_after_s < 0:  # NaN or negative
        return backoff_s
    return min(retry_after_s, QUOTA_BACKOFF_CAP_S)


def clamp_cooldown_to_reset(cooldown_until: datetime, reset_at: datetime | None, now: datetime) -> datetime:
    """A cooldown may end earlier than the backoff says, never later than a future upstream reset."""
    if reset_at is not None and reset_at > now:
        return min(cooldown_until, reset_at)
    return cooldown_until


def quota_cooldown_until(
    *, now: datetime, level: int, retry_after_s: float | None, reset_at: datetime | None
) -> datetime:
    """Cooldown after a quota exhaustion: Retry-After wins over the backoff, then the reset clamps."""
    wait_s = _wait_s(retry_after_s, quota_backoff_s(level))
    return clamp_cooldown_to_reset(now + timedelta(seconds=wait_s), reset_at, now)


def transient_cooldown_until(*, now: datetime, level: int, retry_after_s: float | None) -> datetime:
    """Cooldown after a transient 429: Retry-After when given, else the short backoff; no latch."""
    return now + timedelta(seconds=_wait_s(retry_after_s, transient_backoff_s(level)))
