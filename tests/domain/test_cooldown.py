"""L7: cooldown backoff and the clamp to the upstream reset."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from ladder.domain import (
    clamp_cooldown_to_reset,
    quota_backoff_s,
    quota_cooldown_until,
    transient_backoff_s,
    transient_cooldown_until,
)
from tests.domain.builders import NOW, earlier, later

WEEK_S = 7 * 24 * 3600.0


@pytest.mark.parametrize(
    ("level", "seconds"),
    [
        (0, 60.0),
        (1, 120.0),
        (2, 240.0),
        (5, 1920.0),
        (10, 61440.0),
        (13, 491520.0),
        (14, WEEK_S),  # 983040 s would exceed 7 days
        (20, WEEK_S),
        (50, WEEK_S),
        (10_000, WEEK_S),
    ],
)
def test_it_backs_off_quota_exhaustion_exponentially_capped_at_a_week(level: int, seconds: float) -> None:
    assert quota_backoff_s(level) == seconds


@pytest.mark.parametrize(
    ("level", "seconds"),
    [(0, 5.0), (1, 10.0), (2, 20.0), (5, 160.0), (6, 300.0), (7, 300.0), (100, 300.0)],
)
def test_it_backs_off_transient_429s_capped_at_300_s(level: int, seconds: float) -> None:
    assert transient_backoff_s(level) == seconds


@pytest.mark.parametrize(
    ("cooldown", "reset", "expected"),
    [
        # a 7-day backoff on a window resetting in 2 hours ends in 2 hours
        (later(WEEK_S), later(7200), later(7200)),
        # a reset after the backoff leaves the backoff alone
        (later(60), later(7200), later(60)),
        # a reset already past (or now) leaves the backoff alone
        (later(WEEK_S), earlier(60), later(WEEK_S)),
        (later(WEEK_S), NOW, later(WEEK_S)),
        (later(120), None, later(120)),
    ],
)
def test_it_clamps_a_cooldown_to_a_future_reset(
    cooldown: datetime, reset: datetime | None, expected: datetime
) -> None:
    assert clamp_cooldown_to_reset(cooldown, reset, NOW) == expected


@pytest.mark.parametrize(
    ("level", "retry_after_s", "reset", "expected"),
    [
        (0, None, None, later(60)),
        (3, None, None, later(480)),
        (14, None, later(7200), later(7200)),
        (30, None, None, later(WEEK_S)),
        # upstream Retry-After wins over the backoff
        (0, 900.0, None, later(900)),
        (14, 30.0, None, later(30)),
        # … and the reset still clamps it
        (0, 86400.0, later(3600), later(3600)),
        (0, 30.0, later(3600), later(30)),
        (14, None, earlier(10), later(WEEK_S)),
    ],
)
def test_it_computes_the_quota_cooldown(
    level: int, retry_after_s: float | None, reset: datetime | None, expected: datetime
) -> None:
    assert quota_cooldown_until(now=NOW, level=level, retry_after_s=retry_after_s, reset_at=reset) == expected


@pytest.mark.parametrize(
    ("level", "retry_after_s", "expected"),
    [
        (0, None, later(5)),
        (3, None, later(40)),
        (9, None, later(300)),
        (0, 42.0, later(42)),
        (9, 1.0, later(1)),
    ],
)
def test_it_computes_the_transient_cooldown(
    level: int, retry_after_s: float | None, expected: datetime
) -> None:
    assert transient_cooldown_until(now=NOW, level=level, retry_after_s=retry_after_s) == expected


def test_it_never_ends_a_clamped_cooldown_after_the_reset() -> None:
    reset = NOW + timedelta(hours=2)
    for level in range(25):
        assert quota_cooldown_until(now=NOW, level=level, retry_after_s=None, reset_at=reset) <= reset


@pytest.mark.parametrize("retry_after_s", [1e30, 10.0**12, float(10**20)])
def test_it_caps_an_absurd_retry_after_at_seven_days(retry_after_s: float) -> None:
    quota = quota_cooldown_until(now=NOW, level=0, retry_after_s=retry_after_s, reset_at=None)
    transient = transient_cooldown_until(now=NOW, level=0, retry_after_s=retry_after_s)
    assert quota == NOW + timedelta(days=7)
    assert transient == NOW + timedelta(days=7)


def test_it_ignores_a_nan_retry_after() -> None:
    assert quota_cooldown_until(
        now=NOW, level=1, retry_after_s=float("nan"), reset_at=None
    ) == NOW + timedelta(seconds=120)
