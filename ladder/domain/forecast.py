"""When a window reaches its connection's cutoff at its current burn rate (issue 20, item 1).

The burn rate is the Theil–Sen slope of the window's readings in its current period: the median of
the slopes between every two readings, so that one odd reading (a glitch, a header from another
account) barely moves it. The forecast is where the Theil–Sen line (that slope, and the median
intercept) meets the cutoff, max(exit_cutoff_pct, reserve_pct) (``Thresholds.cutoff_pct``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

# The current period: readings whose reset_at is the latest one's within this much...
PERIOD_RESET_TOLERANCE_S = 60.0
# ...or, for a window that names no reset, the readings of the last six hours.
PERIOD_WITHOUT_RESET_S = 6 * 3600.0
# At most this many of the period's latest readings are fitted: Theil–Sen is quadratic in them
# (120 readings: 7,140 pairs), and two hours of minute polls say the current rate well enough.
FORECAST_MAX_READINGS = 120
# A window without a reset that would last longer than this (a trickle) gets no forecast: so far
# ahead the rate says nothing, and a datetime would overflow.
FORECAST_HORIZON_S = 366 * 86400.0


@dataclass(frozen=True, slots=True)
class Point:
    """One reading of a window: when, how much was left, and when its period said it would reset."""

    at: datetime
    remaining_pct: float
    reset_at: datetime | None = None


def current_period(points: Iterable[Point], now: datetime) -> list[Point]:
    """The readings (up to ``now``, oldest first) of the latest one's period: a reset_at within 60 s
    of the latest one's, or, when the latest names no reset, those of the last six hours naming none."""
    seen = sorted((p for p in points if p.at <= now), key=lambda p: p.at)
    if not seen:
        return []
    reset = seen[-1].reset_at
    if reset is None:
        since = now - timedelta(seconds=PERIOD_WITHOUT_RESET_S)
        period = [p for p in seen if p.at >= since and p.reset_at is None]
    else:
        tolerance = PERIOD_RESET_TOLERANCE_S
        period = [
            p
            for p in seen
            if p.reset_at is not None and abs((p.reset_at - reset).total_seconds()) <= tolerance
        ]
    return period[-FORECAST_MAX_READINGS:]


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(slope, intercept) of the Theil–Sen line; None without two distinct xs. Ten lines of code:
    no dependency (scipy.stats.theilslopes) is warranted for it."""
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i])
        for i in range(len(xs))
        for j in range(i + 1, len(xs))
        if xs[j] != xs[i]
    ]
    if not slopes:
        return None
    slope = median(slopes)
    return slope, median(y - slope * x for x, y in zip(xs, ys, strict=True))


def exhausts_at(points: Iterable[Point], *, cutoff_pct: float, now: datetime) -> datetime | None:
    """When the window's current period reaches ``cutoff_pct`` at its current burn rate; None when
    its latest reading is already at or below the cutoff, with fewer than two readings, when it burns
    nothing (slope >= 0), and when it lasts past its reset (or a year). Never before the latest reading."""
    period = current_period(points, now)
    if len(period) < 2:
        return None
    latest = period[-1]
    if latest.remaining_pct <= cutoff_pct:
        return None
    origin = period[0].at
    fit = theil_sen([(p.at - origin).total_seconds() for p in period], [p.remaining_pct for p in period])
    if fit is None or fit[0] >= 0:
        return None
    slope, intercept = fit
    # Seconds from the latest reading to where the line meets the cutoff (0: the line is already there).
    ahead_s = max(0.0, (cutoff_pct - intercept) / slope - (latest.at - origin).total_seconds())
    if ahead_s > FORECAST_HORIZON_S:
        return None
    when = latest.at + timedelta(seconds=ahead_s)
    if latest.reset_at is not None and when >= latest.reset_at:
        return None
    return when
