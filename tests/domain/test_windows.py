"""L4 per-model windows, L5 freshness, L6 hysteresis."""

from __future__ import annotations

import pytest

from ladder.domain import (
    LadderConfig,
    Window,
    applicable_windows,
    is_fresh,
    is_usable,
    next_latch,
    scope_matches,
)
from ladder.domain.windows import (
    blocks_as_evidence,
    is_exhausted,
    is_too_old,
    needs_refresh,
    reading_age_s,
    reset_passed,
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
    assert is_exhausted(window, config) is exhausted


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
    ("has_reading", "age_s", "windows", "refresh"),
    [
        (False, 0.0, (), True),
        (True, 1.0, (win(50.0),), False),
        (True, 181.0, (win(50.0),), True),
        (True, 1.0, (win(50.0, reset=earlier(1)),), True),
    ],
)
def test_it_asks_for_a_refresh_when_the_reading_is_missing_or_stale(
    has_reading: bool, age_s: float, windows: tuple[Window, ...], refresh: bool
) -> None:
    quota = reading(*windows, age_s=age_s) if has_reading else None
    assert needs_refresh(quota, windows, NOW, DEFAULT) is refresh


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
