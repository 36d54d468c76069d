"""Every time format of the quota fixtures, through the one helper that parses them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ladder.providers.timeparse import (
    UTC_PLUS_8,
    find_time_in_text,
    next_utc_boundary,
    parse_duration_s,
    parse_time,
    retry_after_s,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


ABSOLUTE = [
    # ISO 8601 with offset and microseconds (Claude)
    ("2026-09-01T14:00:00.412805+00:00", at(2026, 9, 1, 14, 0, 0, 412805)),
    # ISO with Z and nanoseconds (Kimi): truncated to microseconds
    ("2026-09-05T09:00:00.716839300Z", at(2026, 9, 5, 9, 0, 0, 716839)),
    # ISO with Z and milliseconds (Copilot, Cursor)
    ("2026-10-01T00:00:00.000Z", at(2026, 10, 1)),
    ("2026-09-01T15:00:00Z", at(2026, 9, 1, 15)),
    # another offset is converted to UTC
    ("2026-09-01T22:00:00+08:00", at(2026, 9, 1, 14)),
    # date-only (Copilot quota_reset_date) is UTC midnight
    ("2026-10-01", at(2026, 10, 1)),
    # zone-less ISO without a tz is UTC
    ("2026-09-01 22:00:00", at(2026, 9, 1, 22)),
    # epoch seconds as int, float and string (Codex, Kiro, Claude headers)
    (1788271200, at(2026, 9, 1, 14)),
    (1790812800.0, at(2026, 10, 1)),
    ("1788598800", at(2026, 9, 5, 9)),
    # epoch milliseconds by magnitude, as int and as string (z.ai, MiniMax, OpenRouter, Cursor)
    (1788271200000, at(2026, 9, 1, 14)),
    ("1788307200000", at(2026, 9, 2)),
    # epoch microseconds and nanoseconds by magnitude
    (1788271200000000, at(2026, 9, 1, 14)),
    (1788271200000000000, at(2026, 9, 1, 14)),
    # HTTP date (Retry-After)
    ("Tue, 01 Sep 2026 12:01:00 GMT", at(2026, 9, 1, 12, 1)),
    # Go-style durations are relative even when the caller did not say so
    ("1m26.4s", NOW + timedelta(seconds=86.4)),
    ("2h0m0s", NOW + timedelta(hours=2)),
    ("850ms", NOW + timedelta(milliseconds=850)),
]


@pytest.mark.parametrize(("value", "expected"), ABSOLUTE)
def test_it_parses_every_absolute_format_to_aware_utc(value: object, expected: datetime) -> None:
    parsed = parse_time(value, now=NOW)
    assert parsed == expected
    assert parsed is not None
    assert parsed.utcoffset() == timedelta(0)


RELATIVE = [
    (7200, 1.0, NOW + timedelta(hours=2)),  # Codex reset_after_seconds
    ("43200.382867097855", 1.0, NOW + timedelta(seconds=43200.382867097855)),  # Cerebras float seconds
    ("41", 1.0, NOW + timedelta(seconds=41)),  # Mistral ratelimitbysize-reset
    (7200000, 0.001, NOW + timedelta(hours=2)),  # MiniMax remains_time in ms
    ("1.8s", 1.0, NOW + timedelta(seconds=1.8)),  # Groq
    ("12ms", 1.0, NOW + timedelta(milliseconds=12)),  # OpenAI
    ("6m0s", 1.0, NOW + timedelta(minutes=6)),
    (0, 1.0, NOW),
]


@pytest.mark.parametrize(("value", "unit_s", "expected"), RELATIVE)
def test_it_parses_relative_values_from_now(value: object, unit_s: float, expected: datetime) -> None:
    assert parse_time(value, now=NOW, relative=True, relative_unit_s=unit_s) == expected


def test_it_reads_zone_less_times_in_the_given_zone() -> None:
    # z.ai writes its reset in UTC+8 without saying so.
    assert parse_time("2026-09-01 22:00:00", now=NOW, tz=UTC_PLUS_8) == at(2026, 9, 1, 14)
    assert parse_time("2026-10-01", now=NOW, tz=timezone(timedelta(hours=-5))) == at(2026, 10, 1, 5)
    # an explicit zone wins over the default
    assert parse_time("2026-09-01T22:00:00Z", now=NOW, tz=UTC_PLUS_8) == at(2026, 9, 1, 22)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "soon",
        "2026-13-45",
        True,
        False,
        {"at": 1},
        [1788271200],
        0,  # epoch 0 = no scheduled reset
        "0",
        -5,
        7200,  # a small number is not a plausible epoch (a relative value read as absolute)
        float("nan"),
        "inf",
        "99999999999999999999999",
        "-1m",
    ],
)
def test_it_answers_none_for_absent_or_unparseable_times(value: object) -> None:
    assert parse_time(value, now=NOW) is None


def test_it_rejects_negative_relative_values() -> None:
    assert parse_time(-30, now=NOW, relative=True) is None


DURATIONS = [
    ("1m26.4s", 86.4),
    ("2h0m0s", 7200.0),
    ("850ms", 0.85),
    ("479.417207ms", 0.479417207),
    ("0.479417207s", 0.479417207),
    ("3600s", 3600.0),
    ("9m38.016s", 578.016),
    ("1.984999999s", 1.984999999),
    ("14h0m0s", 50400.0),
    ("500us", 0.0005),
    ("250ns", 2.5e-7),
    ("0s", 0.0),
    ("43200.0", 43200.0),
    (7, 7.0),
    (11.38, 11.38),
]


@pytest.mark.parametrize(("value", "seconds"), DURATIONS)
def test_it_parses_go_durations_and_bare_seconds(value: object, seconds: float) -> None:
    assert parse_duration_s(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "1x", "m", "1h 2m", "-3s", None, True, "ms5", "1.2.3s"])
def test_it_rejects_malformed_durations(value: object) -> None:
    assert parse_duration_s(value) is None


def test_it_scales_bare_durations_by_their_unit() -> None:
    assert parse_duration_s(7200000, unit_s=0.001) == 7200.0
    assert parse_duration_s("1500", unit_s=0.001) == 1.5


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        ("1.5", 1.5),
        ("Tue, 01 Sep 2026 12:02:00 GMT", 120.0),
        ("Tue, 01 Sep 2026 11:00:00 GMT", 0.0),
    ],
)
def test_it_reads_retry_after_as_seconds_or_an_http_date(value: str, seconds: float) -> None:
    assert retry_after_s(value, now=NOW) == seconds


def test_it_answers_no_retry_after_for_garbage() -> None:
    assert retry_after_s("later", now=NOW) is None
    assert retry_after_s(None, now=NOW) is None


@pytest.mark.parametrize(
    ("period", "now", "expected"),
    [
        ("daily", NOW, at(2026, 9, 2)),
        ("day", at(2026, 12, 31, 23, 59), at(2027, 1, 1)),
        ("weekly", NOW, at(2026, 9, 7)),  # 2026-09-01 is a Tuesday; weeks start Monday
        ("weekly", at(2026, 9, 7, 0, 0), at(2026, 9, 14)),
        ("monthly", NOW, at(2026, 10, 1)),
        ("Monthly", at(2026, 12, 15), at(2027, 1, 1)),
        ("yearly", NOW, None),
    ],
)
def test_it_finds_the_next_utc_calendar_boundary(
    period: str, now: datetime, expected: datetime | None
) -> None:
    assert next_utc_boundary(period, now=now) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Weekly/Monthly Limit Exhausted. Your limit will reset at 2026-09-23 05:53:09",
            "2026-09-22T21:53:09",
        ),
        (
            "Usage limit reached for 5 hour. Your limit will reset at 2026-09-01 22:00:00",
            "2026-09-01T14:00:00",
        ),
        ("Resets at 2026-09-01T22:00:00+08:00", "2026-09-01T14:00:00"),
        ("reset at 2026/09/01 22:00 UTC+8", "2026-09-01T14:00:00"),
        ("您已达到每周/每月使用上限，您的限额将在 2026-07-01T10:00:00.000Z 重置。", "2026-07-01T10:00:00"),
        ("已达到 5 小时的使用上限，将于 2026-09-01 22:00:00 重置", "2026-09-01T14:00:00"),
    ],
)
def test_it_finds_the_reset_written_in_a_message_in_any_wording(text: str, expected: str) -> None:
    found = find_time_in_text(text, now=NOW, tz=UTC_PLUS_8)

    assert found == datetime.fromisoformat(expected).replace(tzinfo=UTC)


def test_it_finds_no_reset_in_a_message_without_a_time() -> None:
    assert find_time_in_text("Weekly/Monthly Limit Exhausted", now=NOW) is None
