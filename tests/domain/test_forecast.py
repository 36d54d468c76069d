"""The forecast of when a window reaches its cutoff (issue 20): period, estimator, the Nones."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder.domain.forecast import (
    FORECAST_MAX_READINGS,
    Point,
    current_period,
    exhausts_at,
    theil_sen,
)
from tests.domain.builders import NOW

MIN = timedelta(minutes=1)
RESET = NOW + timedelta(hours=3)


def burn(pcts: list[float], *, step: timedelta = 10 * MIN, reset: datetime | None = RESET) -> list[Point]:
    """Readings ending at NOW, one every ``step``."""
    start = NOW - step * (len(pcts) - 1)
    return [Point(start + step * i, pct, reset) for i, pct in enumerate(pcts)]


# (case, readings, cutoff, expected exhausts_at)
CASES = [
    # 1 %/10 min from 50 % at NOW: 45 points to a 5 % cutoff = 450 min.
    ("steady burn", burn([53, 52, 51, 50], reset=None), 5.0, NOW + 450 * MIN),
    ("reserve cutoff", burn([53, 52, 51, 50], reset=NOW + timedelta(days=1)), 20.0, NOW + 300 * MIN),
    ("one odd reading is ignored", burn([54, 53, 90, 51, 50], reset=None), 5.0, NOW + 450 * MIN),
    ("odd latest reading is ignored", burn([54, 53, 52, 51, 30], reset=None), 5.0, NOW + 450 * MIN),
    ("runs out before its reset", burn([53, 52, 51, 50]), 40.0, NOW + 100 * MIN),
    ("lasts past its reset", burn([53, 52, 51, 50]), 5.0, None),
    ("at the cutoff", burn([7, 6, 5]), 5.0, None),
    ("below the cutoff", burn([7, 6, 4]), 5.0, None),
    ("burns nothing", burn([50, 50, 50]), 5.0, None),
    ("refills", burn([40, 45, 50]), 5.0, None),
    ("one reading", burn([50]), 5.0, None),
    ("no readings", [], 5.0, None),
    ("same instant twice", [Point(NOW, 50, RESET), Point(NOW, 40, RESET)], 5.0, None),
    ("a trickle without reset", burn([50.0, 50.0 - 1e-9], reset=None), 5.0, None),
    # The line meets the cutoff before the latest reading (it sits just above): now.
    ("line already below", burn([40, 20, 10, 6, 5.5], reset=None), 5.0, NOW),
]


@pytest.mark.parametrize(("points", "cutoff", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_exhausts_at(points: list[Point], cutoff: float, expected: datetime | None) -> None:
    assert exhausts_at(points, cutoff_pct=cutoff, now=NOW) == expected


PERIOD_CASES = [
    # The previous period (another reset) is left out; a reset reported 60 s off is the same one.
    (
        "previous period",
        [Point(NOW - 30 * MIN, 10, NOW - 20 * MIN), Point(NOW - 20 * MIN, 99, RESET), Point(NOW, 98, RESET)],
        [99, 98],
    ),
    (
        "reset jitter",
        [Point(NOW - 20 * MIN, 99, RESET + 60 * MIN / 60), Point(NOW, 98, RESET)],
        [99, 98],
    ),
    (
        "jitter past 60 s",
        [Point(NOW - 20 * MIN, 99, RESET + timedelta(seconds=61)), Point(NOW, 98, RESET)],
        [98],
    ),
    (
        "no reset: six hours",
        [Point(NOW - timedelta(hours=7), 99), Point(NOW - timedelta(hours=5), 97), Point(NOW, 95)],
        [97, 95],
    ),
    ("after now is not yet read", [Point(NOW, 95, RESET), Point(NOW + MIN, 1, RESET)], [95]),
    ("unsorted", [Point(NOW, 95, RESET), Point(NOW - MIN, 96, RESET)], [96, 95]),
]


@pytest.mark.parametrize(
    ("points", "expected"), [c[1:] for c in PERIOD_CASES], ids=[c[0] for c in PERIOD_CASES]
)
def test_current_period(points: list[Point], expected: list[float]) -> None:
    assert [p.remaining_pct for p in current_period(points, NOW)] == expected


def test_a_previous_period_does_not_set_the_rate() -> None:
    """Yesterday's fast burn (another reset) does not speed up today's forecast."""
    old = [Point(NOW - timedelta(hours=h), 10.0 * h, NOW - timedelta(hours=1)) for h in range(5, 1, -1)]
    assert (
        exhausts_at([*old, *burn([53, 52, 51, 50], reset=None)], cutoff_pct=5.0, now=NOW) == NOW + 450 * MIN
    )


def test_only_the_latest_readings_are_fitted() -> None:
    """An earlier steep stretch beyond FORECAST_MAX_READINGS is not fitted."""
    steep = [Point(NOW - timedelta(days=1) + MIN * i, 100 - i * 0.1, None) for i in range(100)]
    recent = burn([60 - i * 0.01 for i in range(FORECAST_MAX_READINGS)], step=MIN, reset=None)
    flat = [Point(p.at, 60.0, None) for p in recent]
    assert current_period([*steep, *recent], NOW) == recent
    assert exhausts_at([*steep, *flat], cutoff_pct=5.0, now=NOW) is None


def test_theil_sen_slope_and_intercept() -> None:
    assert theil_sen([0, 1, 2, 3], [1, 3, 5, 7]) == (2, 1)
    assert theil_sen([0, 1, 2, 3, 4], [0, 1, 100, 3, 4]) == (1, 0)
    assert theil_sen([1, 1], [1, 2]) is None


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=5, max_value=40),
    rate=st.floats(min_value=0.001, max_value=2.0),  # % per minute
    start=st.floats(min_value=30.0, max_value=100.0),
    odd_index=st.integers(min_value=0),
    odd_pct=st.floats(min_value=0.0, max_value=100.0),
    # Jitter of each reading, in fractions of a minute's burn (polls are not exactly a minute apart).
    noise=st.lists(st.floats(min_value=-0.02, max_value=0.02), min_size=40, max_size=40),
)
def test_one_odd_reading_moves_the_forecast_by_at_most_ten_percent(
    n: int, rate: float, start: float, odd_index: int, odd_pct: float, noise: list[float]
) -> None:
    """With 5 or more readings of a steady burn, replacing any one (the latest too) by any value
    moves the time left by at most 10 %, as long as the window is not at its cutoff."""
    cutoff = 5.0
    rate = min(rate, (start - cutoff - 5) / n)  # stays above the cutoff over the n readings
    pcts = [start - rate * (i + noise[i]) for i in range(n)]
    points = burn(pcts, step=MIN, reset=None)
    clean = exhausts_at(points, cutoff_pct=cutoff, now=NOW)
    odd = list(points)
    index = odd_index % n
    odd[index] = Point(points[index].at, odd_pct, None)
    if odd[-1].remaining_pct <= cutoff or clean is None:
        return
    moved = exhausts_at(odd, cutoff_pct=cutoff, now=NOW)
    assert moved is not None
    left = (clean - NOW).total_seconds()
    assert abs((moved - NOW).total_seconds() - left) <= 0.1 * left + 60
