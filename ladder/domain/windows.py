"""L4 per-model windows, L5 freshness and L6 hysteresis."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from fnmatch import fnmatchcase
from functools import lru_cache

from ladder.domain.types import LadderConfig, Reading, Window

# L5: services refuse readings (and reports) dated more than this far after their own clock.
FUTURE_TOLERANCE_S = 300.0


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


def is_exhausted(window: Window, config: LadderConfig) -> bool:
    return window.remaining_pct <= config.exit_cutoff_pct


def is_usable(window: Window, config: LadderConfig) -> bool:
    """Latched: usable only above the re-entry floor; unlatched: above the exit cutoff."""
    threshold = config.reentry_floor_pct if window.latched else config.exit_cutoff_pct
    return window.remaining_pct > threshold


def next_latch(previous_latched: bool, remaining_pct: float, config: LadderConfig) -> bool:
    """The latch after a new reading: set at or below the cutoff, cleared only above the floor."""
    if remaining_pct <= config.exit_cutoff_pct:
        return True
    if remaining_pct > config.reentry_floor_pct:
        return False
    return previous_latched


def reading_age_s(reading: Reading, now: datetime) -> float:
    return max(0.0, (now - reading.fetched_at).total_seconds())


def is_too_old(reading: Reading, now: datetime, config: LadderConfig) -> bool:
    return reading_age_s(reading, now) > config.max_reading_age_s


def reset_passed(window: Window, now: datetime) -> bool:
    return window.reset_at is not None and window.reset_at <= now


def is_fresh(reading: Reading, windows: tuple[Window, ...], now: datetime, config: LadderConfig) -> bool:
    """Young enough, and no applicable window describes a period that has already ended."""
    return not is_too_old(reading, now, config) and not any(reset_passed(w, now) for w in windows)


def needs_refresh(
    reading: Reading | None, windows: tuple[Window, ...], now: datetime, config: LadderConfig
) -> bool:
    return reading is None or not is_fresh(reading, windows, now, config)


def blocks_as_evidence(window: Window, reading_fresh: bool, now: datetime, config: LadderConfig) -> bool:
    """L10: an unusable window excludes a plan pair when the reading is fresh or its reset lies ahead."""
    if is_usable(window, config):
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
