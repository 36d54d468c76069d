"""L4 per-model windows, L5 freshness and L6 hysteresis."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from fnmatch import fnmatchcase
from functools import lru_cache

from ladder.domain.types import Connection, LadderConfig, Limits, Reading, Reason, Thresholds, Window

# L5: services refuse readings (and reports) dated more than this far after their own clock.
FUTURE_TOLERANCE_S = 300.0
# L5: a connection's poll interval is above 0 and at most a day.
POLL_INTERVAL_MAX_S = 86_400.0


def limits_for(
    config: LadderConfig, *, reserve_pct: float | None = None, poll_interval_s: float | None = None
) -> Thresholds:
    """A connection's thresholds (L5, L6 Reserve): cutoff max(exit_cutoff_pct, reserve), the whole
    hysteresis band shifted up by as much, and an age limit max_reading_age_s + poll_interval_s."""
    if reserve_pct is None and poll_interval_s is None:
        return config
    cutoff = max(config.exit_cutoff_pct, reserve_pct or 0.0)
    return Limits(
        exit_cutoff_pct=config.exit_cutoff_pct,
        reserve_pct=reserve_pct,
        cutoff_pct=cutoff,
        floor_pct=config.reentry_floor_pct + (cutoff - config.exit_cutoff_pct),
        age_limit_s=config.max_reading_age_s + (poll_interval_s or 0.0),
    )


def connection_limits(connection: Connection, config: LadderConfig) -> Thresholds:
    return limits_for(config, reserve_pct=connection.reserve_pct, poll_interval_s=connection.poll_interval_s)


def effective_poll_interval_s(refresh_interval_s: float, *floors: float | None) -> float | None:
    """L5: the slowest of a connection's poll floors (the operator's minimum interval, the adapter's
    floor) when it is slower than refresh_interval_s; None while it is polled every interval."""
    slowest = max((f for f in floors if f is not None), default=None)
    return slowest if slowest is not None and slowest > refresh_interval_s else None


@lru_cache(maxsize=65536)
def scope_matches(scope_models: tuple[str, ...], model: str) -> bool:
    """A window applies when its scope is empty or one glob matches the model id (case-insensitive)."""
    if not scope_models:
        return True
    lowered = model.lower()
    return any(fnmatchcase(lowered, glob.lower()) for glob in scope_models)


def applicable_windows(reading: Reading, model: str) -> tuple[Window, ...]:
    windows = reading.windows
    for window in windows:
        if window.scope_models:
            return tuple([w for w in windows if not w.scope_models or scope_matches(w.scope_models, model)])
    return windows  # no window is scoped (the usual reading): all apply


def is_exhausted(window: Window, limits: Thresholds) -> bool:
    """At or below the global exit cutoff: spent, whatever the connection keeps in reserve."""
    return window.remaining_pct <= limits.exit_cutoff_pct


def is_usable(window: Window, limits: Thresholds) -> bool:
    """Latched: usable only above the connection's re-entry floor; unlatched: above its cutoff."""
    threshold = limits.floor_pct if window.latched else limits.cutoff_pct
    return window.remaining_pct > threshold


def blocking_reason(window: Window, limits: Thresholds) -> str:
    """Why a window that is not usable blocks (L6): spent, held back by the reserve, or latched."""
    if window.remaining_pct <= limits.exit_cutoff_pct:
        return Reason.QUOTA_EXHAUSTED
    reserve = limits.reserve_pct
    if reserve is not None and window.remaining_pct <= reserve:
        return Reason.RESERVE_REACHED
    return Reason.BELOW_REENTRY_FLOOR


def next_latch(previous_latched: bool, remaining_pct: float, limits: Thresholds) -> bool:
    """The latch after a new reading: set at or below the cutoff, cleared only above the floor."""
    if remaining_pct <= limits.cutoff_pct:
        return True
    if remaining_pct > limits.floor_pct:
        return False
    return previous_latched


def reading_age_s(reading: Reading, now: datetime) -> float:
    return max(0.0, (now - reading.fetched_at).total_seconds())


def is_too_old(reading: Reading, now: datetime, limits: Thresholds) -> bool:
    return reading_age_s(reading, now) > limits.age_limit_s


def reset_passed(window: Window, now: datetime) -> bool:
    return window.reset_at is not None and window.reset_at <= now


def is_fresh(reading: Reading, windows: tuple[Window, ...], now: datetime, limits: Thresholds) -> bool:
    """Young enough, and no applicable window describes a period that has already ended."""
    return not is_too_old(reading, now, limits) and not any(reset_passed(w, now) for w in windows)


def needs_refresh(
    reading: Reading | None, windows: tuple[Window, ...], now: datetime, limits: Thresholds
) -> bool:
    return reading is None or not is_fresh(reading, windows, now, limits)


def blocks_as_evidence(window: Window, reading_fresh: bool, now: datetime, limits: Thresholds) -> bool:
    """L10: an unusable window excludes a plan pair when the reading is fresh or its reset lies ahead."""
    if is_usable(window, limits):
        return False
    return reading_fresh or (window.reset_at is not None and window.reset_at > now)


def exhaust_windows(
    reading: Reading,
    *,
    window: str | None,
    model: str | None,
    failure_reset_at: datetime | None,
    observed_at: datetime,
) -> tuple[tuple[Window, ...], datetime | None] | None:
    """L6: a quota-exhaustion failure latches the window it names at 0 % (every window applying to the
    model when it names none; one it names that the reading lacks is added, scoped to the model).
    Returns the reading's windows so changed and the reset time the reading knew for the exhausted
    ones (for the cooldown clamp), or None when no window applies."""
    if window is not None:
        named = [w for w in reading.windows if w.name == window]
        if named:
            targets = {id(w) for w in named}
            reset_at = named[0].reset_at
            extra: tuple[Window, ...] = ()
        else:
            # A window the reading did not carry: known to block this model at least.
            targets, reset_at = set(), None
            extra = (
                Window(window, 0.0, failure_reset_at, scope_models=(model,) if model else (), latched=True),
            )
    else:
        applicable = applicable_windows(reading, model) if model else reading.windows
        if not applicable:
            return None
        targets = {id(w) for w in applicable}
        # Which one is spent is unknown: the cooldown must not outlast any of their resets.
        future = [w.reset_at for w in applicable if w.reset_at is not None and w.reset_at > observed_at]
        reset_at = min(future) if future else None
        extra = ()
    # The failure's own reset is the freshest word on a window it names.
    named_reset = failure_reset_at if window is not None else None
    windows = (
        tuple(
            replace(
                w, remaining_pct=0.0, latched=True, reset_at=named_reset or w.reset_at or failure_reset_at
            )
            if id(w) in targets
            else w
            for w in reading.windows
        )
        + extra
    )
    return windows, reset_at
