"""L4 per-model windows, L5 freshness, L6 hysteresis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ladder.domain import (
    LadderConfig,
    Reason,
    Window,
    applicable_windows,
    is_fresh,
    is_usable,
    next_latch,
    scope_matches,
)
from ladder.domain.types import Failure, SpentWindow
from ladder.domain.windows import (
    ResetClamp,
    blocking_reason,
    blocks_as_evidence,
    clamp_failure_resets,
    clamp_reading_resets,
    clamp_reset,
    effective_poll_interval_s,
    exhaust_windows,
    is_too_old,
    poll_floor_s,
    provider_poll_floor_s,
    reading_age_s,
    reset_passed,
    window_max_length_s,
)
from tests.domain.builders import NOW, earlier, later, reading, win

DEFAULT = LadderConfig()
LOW_REENTRY = LadderConfig(exit_cutoff_pct=10.0, reentry_min_remaining_pct=3.0)
WIDE_BAND = LadderConfig(exit_cutoff_pct=2.0, reentry_min_remaining_pct=20.0)


@pytest.mark.parametrize(
    ("scope", "model", "applies"),
    [
        ((), "claude-sonnet-4-5", True),
        (("*opus*",), "claude-opus-4-1", True),
        (("*opus*",), "claude-sonnet-4-5", False),
        (("*OPUS*",), "claude-opus-4-1", True),
        (("*opus*",), "Claude-OPUS-4-1", True),
        (("gpt-4o",), "GPT-4O", True),
        (("gpt-4o",), "gpt-4o-mini", False),
        (("*sonnet*", "*opus*"), "claude-opus-4-1", True),
        (("*:free",), "Llama-3:FREE", True),
        (("claude-?onnet*",), "claude-sonnet-4-5", True),
    ],
)
def test_it_matches_window_scope_globs_case_insensitively(
    scope: tuple[str, ...], model: str, applies: bool
) -> None:
    assert scope_matches(scope, model) is applies


def test_it_keeps_only_the_windows_that_apply_to_the_model() -> None:
    five = win(60.0, name="5h")
    opus = win(0.0, name="7d-opus", scope=["*opus*"])
    quota = reading(five, opus)
    assert applicable_windows(quota, "claude-sonnet-4-5") == (five,)
    assert applicable_windows(quota, "claude-opus-4-1") == (five, opus)


@pytest.mark.parametrize(
    ("pct", "latched", "config", "usable", "exhausted"),
    [
        (50.0, False, DEFAULT, True, False),
        (3.0, False, DEFAULT, True, False),  # in the band, unlatched: above the cutoff
        (2.0, False, DEFAULT, False, True),  # at the cutoff is exhausted
        (2.0001, False, DEFAULT, True, False),
        (0.0, False, DEFAULT, False, True),
        (3.0, True, DEFAULT, False, False),  # latched: only above the floor (5)
        (5.0, True, DEFAULT, False, False),
        (5.0001, True, DEFAULT, True, False),
        (6.0, True, DEFAULT, True, False),
        (1.0, True, DEFAULT, False, True),
        # re-entry below the cutoff: the floor is the cutoff (10)
        (10.0, True, LOW_REENTRY, False, True),
        (10.5, True, LOW_REENTRY, True, False),
        (8.0, True, LOW_REENTRY, False, True),
        (4.0, False, LOW_REENTRY, False, True),
        (10.5, False, LOW_REENTRY, True, False),
        # a wide band
        (19.0, True, WIDE_BAND, False, False),
        (19.0, False, WIDE_BAND, True, False),
        (20.5, True, WIDE_BAND, True, False),
    ],
)
def test_it_applies_hysteresis_to_usability(
    pct: float, latched: bool, config: LadderConfig, usable: bool, exhausted: bool
) -> None:
    window = win(pct, latched=latched)
    assert is_usable(window, config) is usable
    assert (blocking_reason(window, config) == Reason.QUOTA_EXHAUSTED) is exhausted


@pytest.mark.parametrize(
    ("config", "floor"),
    [
        (DEFAULT, 5.0),
        (LOW_REENTRY, 10.0),
        (WIDE_BAND, 20.0),
        (LadderConfig(exit_cutoff_pct=5.0, reentry_min_remaining_pct=5.0), 5.0),
        (LadderConfig(exit_cutoff_pct=0.0, reentry_min_remaining_pct=0.0), 0.0),
    ],
)
def test_it_sets_the_reentry_floor_to_the_larger_of_reentry_and_cutoff(
    config: LadderConfig, floor: float
) -> None:
    assert config.reentry_floor_pct == floor


@pytest.mark.parametrize(
    ("previous", "pct", "config", "latched"),
    [
        (False, 50.0, DEFAULT, False),
        (False, 2.0, DEFAULT, True),  # at the cutoff sets the latch
        (False, 0.0, DEFAULT, True),
        (False, 3.0, DEFAULT, False),  # entering the band from above: not latched
        (False, 5.0, DEFAULT, False),
        (True, 3.0, DEFAULT, True),  # in the band: the latch holds
        (True, 5.0, DEFAULT, True),  # at the floor: still held
        (True, 5.0001, DEFAULT, False),  # above the floor: cleared
        (True, 80.0, DEFAULT, False),
        (True, 1.0, DEFAULT, True),
        # re-entry below the cutoff: there is no band; the floor is the cutoff
        (True, 10.0, LOW_REENTRY, True),
        (True, 10.5, LOW_REENTRY, False),
        (False, 9.0, LOW_REENTRY, True),
        (True, 4.0, LOW_REENTRY, True),
    ],
)
def test_it_moves_the_latch_across_the_band(
    previous: bool, pct: float, config: LadderConfig, latched: bool
) -> None:
    assert next_latch(previous, pct, config) is latched


def test_it_walks_a_hovering_connection_without_flapping() -> None:
    latched = False
    seen = []
    for pct in (10.0, 3.0, 2.0, 3.0, 4.0, 5.0, 6.0, 3.0):
        latched = next_latch(latched, pct, DEFAULT)
        seen.append(is_usable(Window("5h", pct, latched=latched), DEFAULT))
    assert seen == [True, True, False, False, False, False, True, True]


@pytest.mark.parametrize(
    ("age_s", "expected"),
    [(0.0, 0.0), (1.0, 1.0), (180.0, 180.0), (-30.0, 0.0), (-400.0, 0.0)],
)
def test_it_never_gives_a_negative_reading_age(age_s: float, expected: float) -> None:
    assert reading_age_s(reading(age_s=age_s), NOW) == expected


@pytest.mark.parametrize(
    ("age_s", "windows", "fresh"),
    [
        (1.0, (win(50.0),), True),
        (180.0, (win(50.0),), True),  # ≤ max_reading_age_s
        (180.001, (win(50.0),), False),
        (1200.0, (win(0.0, reset=later(3600)),), False),
        (-60.0, (win(50.0),), True),
        # reset-aware staleness: a window whose reset has passed, whatever the age
        (1.0, (win(50.0, reset=earlier(1)),), False),
        (1.0, (win(50.0, reset=NOW),), False),  # reset_at ≤ now
        (1.0, (win(50.0, reset=later(1)),), True),
        (1.0, (win(50.0, reset=later(3600)), win(0.0, name="7d", reset=earlier(60))), False),
        (1.0, (), True),
    ],
)
def test_it_judges_freshness_with_reset_aware_staleness(
    age_s: float, windows: tuple[Window, ...], fresh: bool
) -> None:
    quota = reading(*windows, age_s=age_s)
    assert is_fresh(quota, windows, NOW, DEFAULT) is fresh


def test_it_ignores_the_reset_of_a_window_that_does_not_apply() -> None:
    opus = win(0.0, name="7d-opus", reset=earlier(60), scope=["*opus*"])
    quota = reading(win(50.0), opus)
    assert is_fresh(quota, applicable_windows(quota, "claude-sonnet-4-5"), NOW, DEFAULT)
    assert not is_fresh(quota, applicable_windows(quota, "claude-opus-4-1"), NOW, DEFAULT)


def test_it_uses_the_configured_reading_age() -> None:
    config = LadderConfig(max_reading_age_s=30.0)
    assert is_too_old(reading(age_s=31.0), NOW, config)
    assert not is_too_old(reading(age_s=30.0), NOW, config)
    assert not is_fresh(reading(age_s=31.0), (), NOW, config)


@pytest.mark.parametrize(
    ("reset", "passed"),
    [(None, False), (earlier(1), True), (NOW, True), (later(1), False)],
)
def test_it_tells_when_a_window_reset_has_passed(reset: object, passed: bool) -> None:
    assert reset_passed(win(50.0, reset=reset), NOW) is passed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("window", "reading_fresh", "evidence"),
    [
        (win(50.0), True, False),  # usable: never evidence
        (win(50.0, reset=later(60)), False, False),
        (win(0.0), True, True),  # fresh reading, exhausted
        (win(0.0), False, False),  # stale, reset unknown: fail open
        (win(0.0, reset=later(3600)), False, True),  # stale but its reset lies ahead
        (win(0.0, reset=earlier(1)), False, False),  # its own reset passed
        (win(0.0, reset=NOW), False, False),
        (win(4.0, latched=True), True, True),  # latched, below the floor
        (win(4.0, latched=True, reset=later(60)), False, True),
        (win(4.0, latched=True), False, False),
        (win(4.0), True, False),  # unlatched in the band is usable
    ],
)
def test_it_decides_what_is_evidence_under_thrifty(
    window: Window, reading_fresh: bool, evidence: bool
) -> None:
    assert blocks_as_evidence(window, reading_fresh, NOW, DEFAULT) is evidence


# --- L7: impossible resets -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hours"),
    [
        ("5h", 5),
        ("7d", 168),
        ("7d-opus", 168),
        ("30m", 0.5),
        ("monthly-premium", 744),
        ("tokens-month", 744),
        ("requests-day", 24),
        ("daily-requests", 24),
        ("requests-minute", 1 / 60),
        ("key-limit", 744),
        ("gemini-2.5-pro", 744),
    ],
)
def test_it_knows_how_long_a_window_can_last_from_its_name(name: str, hours: float) -> None:
    assert window_max_length_s(name) == pytest.approx(hours * 3600)


def test_it_clamps_a_reset_further_ahead_than_the_window_can_last() -> None:
    in_2199 = datetime(2199, 1, 1, tzinfo=UTC)

    assert clamp_reset("5h", in_2199, NOW) == NOW + timedelta(hours=5)
    assert clamp_reset("7d-sonnet", in_2199, NOW) == NOW + timedelta(days=7)
    assert clamp_reset(None, in_2199, NOW) == NOW + timedelta(days=31)
    assert clamp_reset("5h", NOW + timedelta(hours=5), NOW) == NOW + timedelta(hours=5)
    assert clamp_reset("5h", NOW - timedelta(hours=1), NOW) == NOW - timedelta(hours=1)
    assert clamp_reset("5h", None, NOW) is None


def test_it_reports_each_clamp_of_a_reading_and_of_a_failure() -> None:
    in_2199 = datetime(2199, 1, 1, tzinfo=UTC)
    fine = NOW + timedelta(hours=1)
    clamped, clamps = clamp_reading_resets(
        reading(win(50, name="5h", reset=in_2199), win(60, name="7d", reset=fine)), NOW
    )

    assert [w.reset_at for w in clamped.windows] == [NOW + timedelta(hours=5), fine]
    assert clamps == (ResetClamp("5h", in_2199, NOW + timedelta(hours=5)),)

    failure = Failure(
        "quota_exhausted",
        window="7d",
        reset_at=in_2199,
        windows=(SpentWindow("7d", in_2199), SpentWindow("5h", fine)),
    )
    clamped_failure, failure_clamps = clamp_failure_resets(failure, NOW)
    assert clamped_failure.reset_at == NOW + timedelta(days=7)
    assert clamped_failure.windows == (SpentWindow("7d", NOW + timedelta(days=7)), SpentWindow("5h", fine))
    assert failure_clamps == (ResetClamp("7d", in_2199, NOW + timedelta(days=7)),)
    assert clamp_failure_resets(Failure("rate_limited"), NOW) == (Failure("rate_limited"), ())


def test_it_latches_every_window_a_failure_names() -> None:
    in_5d = NOW + timedelta(days=5)
    before = reading(win(40, name="5h", reset=later(3600)), win(70, name="7d", reset=later(86400)))

    result = exhaust_windows(
        before,
        spent=(SpentWindow("7d-opus", in_5d), SpentWindow("5h", None)),
        model="claude-opus-4-1",
        failure_reset_at=in_5d,
        observed_at=NOW,
    )

    assert result is not None
    windows, reset_at = result
    by_name = {w.name: w for w in windows}
    assert (by_name["5h"].remaining_pct, by_name["5h"].latched, by_name["5h"].reset_at) == (
        0.0,
        True,
        later(3600),
    )
    assert (by_name["7d"].remaining_pct, by_name["7d"].latched) == (70, False)
    assert by_name["7d-opus"].scope_models == ("claude-opus-4-1",)
    assert (by_name["7d-opus"].remaining_pct, by_name["7d-opus"].reset_at) == (0.0, in_5d)
    assert reset_at == in_5d  # the last of their resets


# --- L5: poll floors -------------------------------------------------------------------------


def test_it_takes_a_providers_poll_floor_from_the_table_unless_overridden() -> None:
    assert provider_poll_floor_s("claude") == 300.0
    assert provider_poll_floor_s(" Claude ") == 300.0
    assert provider_poll_floor_s("codex") is None
    assert provider_poll_floor_s("claude", {"claude": 3.0}) == 3.0
    assert provider_poll_floor_s("claude", {"claude": 0.0}) is None  # lifted
    assert provider_poll_floor_s("codex", {"codex": 90.0}) == 90.0


@pytest.mark.parametrize(
    ("refresh_s", "operator_s", "adapter_s", "interval_s"),
    [
        (60.0, None, None, None),
        (60.0, None, 300.0, 300.0),  # Claude's floor: its poll interval
        (60.0, 900.0, 300.0, 900.0),  # the slower floor wins
        (600.0, None, 300.0, None),  # polled every refresh interval anyway
        (60.0, 30.0, None, None),
    ],
)
def test_it_polls_every_slowest_of_interval_and_floors(
    refresh_s: float, operator_s: float | None, adapter_s: float | None, interval_s: float | None
) -> None:
    assert effective_poll_interval_s(refresh_s, poll_floor_s(operator_s, adapter_s)) == interval_s
