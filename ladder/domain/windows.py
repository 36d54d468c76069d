"""L4 per-model windows, L5 freshness, L6 hysteresis and L7's impossible resets."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from functools import lru_cache
from types import MappingProxyType

from msgspec.structs import replace

from ladder.domain.types import POLL_INTERVAL_MAX_S as POLL_INTERVAL_MAX_S  # L5, re-exported
from ladder.domain.types import (
    Connection,
    Failure,
    LadderConfig,
    Limits,
    Reading,
    Reason,
    SpentWindow,
    Thresholds,
    Window,
)

# L5: services refuse readings (and reports) dated more than this far after their own clock.
FUTURE_TOLERANCE_S = 300.0


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


# L5: the poll floor of each provider whose usage endpoint throttles pollers, in seconds between
# polls. The adapters declare theirs through this table (``BaseAdapter.poll_floor_s``) so that
# selectors, which may not import the adapters, read the same numbers; settings may override it
# (``LADDER_POLL_FLOOR_S``, which tests lower). Claude: its OAuth usage endpoint answers 429 to
# pollers that call it every 30-60 s (anthropics/claude-code#31637); five minutes is what peers poll.
PROVIDER_POLL_FLOOR_S: Mapping[str, float] = MappingProxyType({"claude": 300.0})


def provider_poll_floor_s(provider: str, overrides: Mapping[str, float] | None = None) -> float | None:
    """A provider's poll floor: the override when given (0 or less: none), else the table's."""
    key = provider.strip().lower()
    floor = (overrides or {}).get(key, PROVIDER_POLL_FLOOR_S.get(key))
    return float(floor) if floor is not None and floor > 0 else None


def poll_floor_s(min_poll_interval_s: float | None, adapter_floor_s: float | None) -> float | None:
    """The least time between two polls of a connection: the slower of the operator's minimum
    interval and the adapter's floor; None when neither holds polls back."""
    floors = [f for f in (min_poll_interval_s, adapter_floor_s) if f is not None and f > 0]
    return max(floors) if floors else None


def effective_poll_interval_s(refresh_interval_s: float, floor_s: float | None) -> float | None:
    """L5: a connection's poll floor (poll_floor_s: the slower of the operator's minimum interval and
    the adapter's floor) when it is slower than refresh_interval_s; None while it is polled every
    interval."""
    return floor_s if floor_s is not None and floor_s > refresh_interval_s else None


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


def blocks_as_evidence(window: Window, reading_fresh: bool, now: datetime, limits: Thresholds) -> bool:
    """L10: an unusable window excludes a plan pair when the reading is fresh or its reset lies ahead."""
    if is_usable(window, limits):
        return False
    return reading_fresh or (window.reset_at is not None and window.reset_at > now)


def exhaust_windows(
    reading: Reading,
    *,
    spent: Sequence[SpentWindow],
    model: str | None,
    failure_reset_at: datetime | None,
    observed_at: datetime,
) -> tuple[tuple[Window, ...], datetime | None] | None:
    """L6: a quota-exhaustion failure latches every window it names at 0 % (every window applying to
    the model when it names none; one it names that the reading lacks is added, scoped to the model).

    Returns the reading's windows so changed and the reset that clamps the cooldown (L7): the latest
    reset of the named windows (the failure's own word on a window first, else the reading's), or,
    when none is named, the earliest future reset of the applicable ones (which one is spent is
    unknown: the cooldown must not outlast any of their resets). None when no window applies."""
    if spent:
        named = {s.name: s for s in reversed(spent)}  # the first mention of a name wins
        present = {w.name for w in reading.windows}
        windows = tuple(
            replace(w, remaining_pct=0.0, latched=True, reset_at=named[w.name].reset_at or w.reset_at)
            if w.name in named
            else w
            for w in reading.windows
        )
        # A window the reading did not carry: known to block this model at least.
        scope = (model,) if model else ()
        extra = tuple(
            Window(s.name, 0.0, s.reset_at, scope_models=scope, latched=True)
            for s in dict.fromkeys(named[name] for name in (s.name for s in spent))
            if s.name not in present
        )
        changed = windows + extra
        resets = [w.reset_at for w in changed if w.name in named and w.reset_at is not None]
        return changed, max(resets) if resets else None
    applicable = applicable_windows(reading, model) if model else reading.windows
    if not applicable:
        return None
    targets = {id(w) for w in applicable}
    future = [w.reset_at for w in applicable if w.reset_at is not None and w.reset_at > observed_at]
    windows = tuple(
        replace(w, remaining_pct=0.0, latched=True, reset_at=w.reset_at or failure_reset_at)
        if id(w) in targets
        else w
        for w in reading.windows
    )
    return windows, min(future) if future else None


# --- impossible resets (L7) ------------------------------------------------------------------

# How long a window can last, by the words of its name (``monthly-premium``, ``requests-day``); a
# calendar month lasts at most 31 days.
_WORD_LENGTH_S: dict[str, float] = {
    "minute": 60.0,
    "minutes": 60.0,
    "hour": 3600.0,
    "hourly": 3600.0,
    "day": 86_400.0,
    "daily": 86_400.0,
    "week": 7 * 86_400.0,
    "weekly": 7 * 86_400.0,
    "month": 31 * 86_400.0,
    "monthly": 31 * 86_400.0,
}
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 7 * 86_400.0}
# A name that starts with a length: ``5h``, ``7d``, ``7d-opus``, ``30m`` (m = minutes, as adapters name them).
_LENGTH_PREFIX = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])(?![a-z])")
# A window of unknown length (a model's quota, a key's limit) is taken to last at most 31 days.
UNKNOWN_WINDOW_LENGTH_S = 31 * 86_400.0


@lru_cache(maxsize=4096)
def window_max_length_s(name: str) -> float:
    """The longest a window of this name can last: its length when the name starts with one (``5h``,
    ``7d-opus``), else the period its words name (``monthly-chat``: 31 days), else 31 days."""
    lowered = name.strip().lower()
    prefix = _LENGTH_PREFIX.match(lowered)
    if prefix is not None and float(prefix[1]) > 0:
        return float(prefix[1]) * _UNIT_S[prefix[2]]
    lengths = [_WORD_LENGTH_S[word] for word in re.findall(r"[a-z]+", lowered) if word in _WORD_LENGTH_S]
    return max(lengths) if lengths else UNKNOWN_WINDOW_LENGTH_S


def latest_possible_reset(name: str | None, now: datetime) -> datetime:
    """The latest a window of this name (None: a window of unknown length) can reset, seen at ``now``."""
    length_s = window_max_length_s(name) if name else UNKNOWN_WINDOW_LENGTH_S
    return now + timedelta(seconds=length_s)


def clamp_reset(name: str | None, reset_at: datetime | None, now: datetime) -> datetime | None:
    """L7: a reset reported further ahead than the window can last is impossible (a 5 h window that
    resets in 2199): it is clamped to ``now`` + the window's length. Other resets are kept."""
    if reset_at is None:
        return None
    return min(reset_at, latest_possible_reset(name, now))


@dataclass(frozen=True, slots=True)
class ResetClamp:
    """One impossible reset and what it was clamped to, for the log."""

    window: str | None
    reported: datetime
    clamped: datetime


def clamp_reading_resets(reading: Reading, now: datetime) -> tuple[Reading, tuple[ResetClamp, ...]]:
    """The reading with every window's impossible reset clamped (``now``: when the resets were
    reported, the reading's own time), and the clamps made."""
    clamps: list[ResetClamp] = []
    windows: list[Window] = []
    for window in reading.windows:
        clamped = clamp_reset(window.name, window.reset_at, now)
        if clamped is not None and window.reset_at is not None and clamped != window.reset_at:
            clamps.append(ResetClamp(window.name, window.reset_at, clamped))
            window = replace(window, reset_at=clamped)
        windows.append(window)
    if not clamps:
        return reading, ()
    return replace(reading, windows=tuple(windows)), tuple(clamps)


def clamp_failure_resets(failure: Failure, now: datetime) -> tuple[Failure, tuple[ResetClamp, ...]]:
    """The failure with each impossible reset clamped: a named window's by that window's length, its
    ``reset_at`` by the first window's (31 days when it names none). Returns the clamps made, each
    window once (``reset_at`` is usually the first window's own reset)."""
    clamps: dict[tuple[str | None, datetime], ResetClamp] = {}

    def clamp(name: str | None, reset_at: datetime | None) -> datetime | None:
        clamped = clamp_reset(name, reset_at, now)
        if reset_at is not None and clamped is not None and clamped != reset_at:
            clamps.setdefault((name, reset_at), ResetClamp(name, reset_at, clamped))
        return clamped

    windows = tuple(SpentWindow(w.name, clamp(w.name, w.reset_at)) for w in failure.windows)
    reset_at = clamp(failure.window, failure.reset_at)
    if not clamps:
        return failure, ()
    return dataclass_replace(failure, reset_at=reset_at, windows=windows), tuple(clamps.values())
