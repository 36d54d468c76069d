from __future__ import annotations

import copy
import json
import re
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from devtools.fakeupstream.fixtures import DEFAULT_FIXTURES_DIR
from devtools.fakeupstream.timeshift import format_like, shift_times
from tests.fakeupstream.conftest import FIXTURE_TIME

FIXTURE_FILES = sorted(DEFAULT_FIXTURES_DIR.glob("*.json"))

# An oracle written independently of the implementation: what a whole-day shift must do to a leaf.
_DATETIME_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?=[T ]\d{2}:\d{2})")
_DATE_ONLY = re.compile(r"202[67]-\d{2}-\d{2}")
_EPOCH_TOKEN = re.compile(r"(?<![\w.])(1[78]\d{8})(\d{3})?(?![\w])")


def _expected_after_whole_days(value: Any, days: int) -> Any:
    if isinstance(value, dict):
        return {key: _expected_after_whole_days(item, days) for key, item in value.items()}
    if isinstance(value, list):
        return [_expected_after_whole_days(item, days) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        if 1.7e9 <= value < 1.9e9:
            return value + days * 86400
        if 1.7e12 <= value < 1.9e12:
            return value + days * 86_400_000
        return value
    if _DATE_ONLY.fullmatch(value):
        return (date.fromisoformat(value) + timedelta(days=days)).isoformat()
    value = _DATETIME_DATE.sub(lambda m: (date.fromisoformat(m[1]) + timedelta(days=days)).isoformat(), value)

    def epoch(match: re.Match[str]) -> str:
        millis = match[2] is not None
        shifted = int(match[0]) + days * (86_400_000 if millis else 86400)
        return str(shifted)

    return _EPOCH_TOKEN.sub(epoch, value)


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{path}/{key}")]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, f"{path}[{i}]")]
    return [(path, value)]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_it_has_all_eighteen_fixture_files() -> None:
    assert len(FIXTURE_FILES) == 18


@pytest.mark.parametrize("days", [1, 37, 400, -3])
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_it_moves_every_absolute_time_by_whole_days_and_nothing_else(path: Path, days: int) -> None:
    original = _load(path)
    shifted = shift_times(original, timedelta(days=days), FIXTURE_TIME)
    expected = _expected_after_whole_days(original, days)
    differences = [
        (where, want, got)
        for (where, want), (_, got) in zip(_leaves(expected), _leaves(shifted), strict=True)
        if want != got
    ]
    assert differences == []
    assert shifted == expected  # same structure, same keys


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_it_finds_at_least_one_time_in_every_fixture(path: Path) -> None:
    original = _load(path)
    shifted = shift_times(original, timedelta(days=5), FIXTURE_TIME)
    changed = [a for (_, a), (_, b) in zip(_leaves(original), _leaves(shifted), strict=True) if a != b]
    assert changed  # at least fixture_time_utc


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_it_leaves_its_input_untouched(path: Path) -> None:
    original = _load(path)
    before = copy.deepcopy(original)
    shift_times(original, timedelta(days=9, hours=3), FIXTURE_TIME)
    assert original == before


@pytest.mark.parametrize("delta_s", [0, 1, 3600 * 5 + 7, 86400 * 123 + 59, -86400 * 2 - 1])
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_it_round_trips_a_whole_second_shift(path: Path, delta_s: int) -> None:
    original = _load(path)
    delta = timedelta(seconds=delta_s)
    there = shift_times(original, delta, FIXTURE_TIME)
    assert shift_times(there, -delta, FIXTURE_TIME + delta) == original


def test_it_does_not_shift_when_the_delta_is_zero() -> None:
    for path in FIXTURE_FILES:
        original = _load(path)
        assert shift_times(original, timedelta(0), FIXTURE_TIME) == original


ONE_AND_A_HALF_HOURS = timedelta(hours=1, minutes=30, seconds=15, microseconds=500_000)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("2026-09-01T14:00:00.412805+00:00", "2026-09-01T15:30:15.912805+00:00"),
        ("2026-09-05T09:00:00.716839300Z", "2026-09-05T10:30:16.216839300Z"),
        ("2026-10-01T00:00:00.000Z", "2026-10-01T01:30:15.500Z"),
        ("2026-09-01T12:00:01Z", "2026-09-01T13:30:16Z"),
        ("2026-09-01T12:00:01+0800", "2026-09-01T13:30:16+0800"),
        ("2026-09-01 22:00:00", "2026-09-01 23:30:15"),
        ("2026-09-01T12:00", "2026-09-01T13:30"),
        ("reset at 2026-09-01 22:00:00.", "reset at 2026-09-01 23:30:15."),
        ("resets at 2026-09-01T14:00:00Z (2056)", "resets at 2026-09-01T15:30:15Z (2056)"),
        ("1788271200", "1788276615"),
        ("1788307200000", "1788312615500"),
        ("1790812800.0", "1790818215.5"),
        ("tid=<x>;exp=1788265800;sku=y", "tid=<x>;exp=1788271215;sku=y"),
        (
            "?starting_at=2026-09-01T00:00:00Z&bucket_width=1d",
            "?starting_at=2026-09-01T01:30:15Z&bucket_width=1d",
        ),
        ("2026-12-31T23:00:00Z", "2027-01-01T00:30:15Z"),
    ],
)
def test_it_shifts_strings_by_a_fractional_delta_keeping_their_form(before: str, after: str) -> None:
    assert shift_times(before, ONE_AND_A_HALF_HOURS, FIXTURE_TIME) == after


def test_it_shifts_epoch_numbers_in_seconds_and_milliseconds() -> None:
    document = {"s": 1788271200, "ms": 1788271200000, "float_s": 1790812800.0}
    shifted = shift_times(document, ONE_AND_A_HALF_HOURS, FIXTURE_TIME)
    assert shifted == {"s": 1788276615, "ms": 1788276615500, "float_s": 1790818215.5}
    assert isinstance(shifted, dict)
    assert isinstance(shifted["s"], int)
    assert isinstance(shifted["float_s"], float)


def test_it_shifts_date_only_strings_by_the_delta_rounded_to_days() -> None:
    assert shift_times("2026-10-01", timedelta(days=3, hours=5), FIXTURE_TIME) == "2026-10-04"
    assert shift_times("2026-10-01", timedelta(days=3, hours=13), FIXTURE_TIME) == "2026-10-05"
    assert shift_times("2026-10-01", timedelta(hours=-1), FIXTURE_TIME) == "2026-10-01"
    assert shift_times("2026-10-01", timedelta(hours=-13), FIXTURE_TIME) == "2026-09-30"


@pytest.mark.parametrize(
    "untouched",
    [
        "60",
        "7200",
        "1m26.4s",
        "1.8s",
        "644ms",
        "43200.382867097855",
        "0.479417207s",
        "14h0m0s",
        "2023-06-01",  # anthropic-version: a date far from the fixture time is a version, not a time
        "2025-04-01",
        "oauth-2025-04-20",
        "req_011FAKE0000000000000001",
        "0123456789abcdef0123456789abcdef",
        "00000000-fake-4000-8000-000000000001",
        "065651beccc4579e5c7e66c9fake0001",
        "1000000000",
        "sk-or-v1-abc...f00",
        "Resets in 4d 16h",
        "not a date: 2026-13-45T99:00:00Z",
    ],
)
def test_it_leaves_relative_durations_counts_and_ids_alone(untouched: str) -> None:
    assert shift_times(untouched, timedelta(days=10, seconds=5), FIXTURE_TIME) == untouched


@pytest.mark.parametrize(
    "number", [0, 1, 60, 7200, 18000, 604800, 1048576, 1_000_000_000, 2_000_000, 14400, -1]
)
def test_it_leaves_numbers_outside_the_window_alone(number: int) -> None:
    assert shift_times(number, timedelta(days=10), FIXTURE_TIME) == number


def test_it_never_touches_keys_or_booleans() -> None:
    document = {"2026-09-01T12:00:00Z": True, "1788271200": False}
    assert shift_times(document, timedelta(days=1), FIXTURE_TIME) == document


def test_it_formats_a_moment_like_its_template() -> None:
    moment = datetime(2026, 9, 2, 3, 4, 5, 123456, tzinfo=FIXTURE_TIME.tzinfo)
    assert format_like("2026-09-01T14:00:00.412805+00:00", moment) == "2026-09-02T03:04:05.123456+00:00"
    assert format_like("2026-09-05T09:00:00.716839300Z", moment) == "2026-09-02T03:04:05.123456000Z"
    assert format_like("2026-10-01T00:00:00.000Z", moment) == "2026-09-02T03:04:05.123Z"
    assert format_like("2026-09-01T12:00:01+08:00", moment) == "2026-09-02T11:04:05+08:00"
    assert format_like("garbage", moment) == "2026-09-02T03:04:05Z"
