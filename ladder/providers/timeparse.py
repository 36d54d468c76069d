"""Every time format the quota fixtures use, parsed by one helper (fixtures README §2).

Absolute times: ISO 8601 with ``Z`` or an offset and any number of fraction digits, zone-less ISO
and date-only values (read in the caller's ``tz``: UTC unless told, z.ai is UTC+8), HTTP dates
(``Retry-After``), and epoch numbers or numeric strings whose unit (s, ms, µs, ns) is told by
magnitude. Relative times: bare numbers of seconds (or of ``relative_unit_s`` seconds) when the
caller says the value is relative, and Go-style durations (``1m26.4s``, ``2h0m0s``, ``850ms``),
which are relative whatever the caller says. Nothing here reads the clock: ``now`` is an argument.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from email.utils import parsedate_to_datetime

UTC_PLUS_8 = timezone(timedelta(hours=8), "UTC+8")

# Times outside this range are a unit mistake (Kiro: "a value outside ~2001-2100 means a unit change").
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

_GO_UNITS_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PIECE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_DURATION = re.compile(rf"(?:{_GO_PIECE.pattern})+")


def parse_number(value: object) -> float | None:
    """A finite number from a JSON number or a numeric string; booleans are not numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)  # a string's surrounding whitespace is ignored
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def parse_duration_s(value: object, *, unit_s: float = 1.0) -> float | None:
    """Seconds in a duration: a bare number (counting ``unit_s`` seconds each) or a Go-style string.

    ``"1m26.4s"`` → 86.4, ``"850ms"`` → 0.85, ``"3600s"`` → 3600, ``"43200.38"`` → 43200.38,
    ``7200000`` with ``unit_s=0.001`` → 7200. Negative, empty or unparseable values give None.
    """
    number = parse_number(value)
    if number is not None:
        seconds = number * unit_s
    elif isinstance(value, str) and _GO_DURATION.fullmatch(value.strip()):
        seconds = sum(float(amount) * _GO_UNITS_S[unit] for amount, unit in _GO_PIECE.findall(value))
    else:
        return None
    return seconds if seconds >= 0 else None


def _from_epoch(number: float) -> datetime | None:
    if number <= 0:  # epoch 0 means "no scheduled reset"
        return None
    for divisor in (1.0, 1e3, 1e6, 1e9):  # s, ms, µs, ns by magnitude (README: < 1e12 is seconds)
        if number / divisor < 1e12:
            try:
                return datetime.fromtimestamp(number / divisor, tz=UTC)
            except (OverflowError, OSError, ValueError):
                return None
    return None


def _from_text(text: str, tz: tzinfo) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        try:
            parsed = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    return parsed


def parse_time(
    value: object,
    *,
    now: datetime,
    tz: tzinfo = UTC,
    relative: bool = False,
    relative_unit_s: float = 1.0,
) -> datetime | None:
    """An aware UTC datetime from any time format of the fixtures; None when absent or unparseable.

    ``relative=True`` reads bare numbers as a duration from ``now`` (``reset_after_seconds``,
    Cerebras float seconds, MiniMax ``remains_time`` with ``relative_unit_s=0.001``); otherwise bare
    numbers are epoch times. Results outside 2000-2200 are rejected as unit mistakes.
    """
    number = parse_number(value)
    if number is not None and relative:
        seconds = parse_duration_s(number, unit_s=relative_unit_s)
        parsed = None if seconds is None else now + timedelta(seconds=seconds)
    elif number is not None:
        parsed = _from_epoch(number)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        seconds = parse_duration_s(text)  # not a number here: a Go duration, or None
        parsed = now + timedelta(seconds=seconds) if seconds is not None else _from_text(text, tz)
    else:
        return None
    if parsed is None:
        return None
    parsed = parsed.astimezone(UTC)
    return parsed if EARLIEST <= parsed < LATEST else None


# No upstream wait is taken longer than the 7-day backoff cap (DESIGN L7); larger values are capped.
MAX_RETRY_AFTER_S = 7 * 24 * 3600.0


def cap_retry_after_s(seconds: float | None) -> float | None:
    """A wait in 0..7 days (None stays None; NaN gives None; anything larger is capped)."""
    if seconds is None or seconds != seconds:
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER_S)


def retry_after_s(value: object, *, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds, a Go duration or an HTTP date,
    capped at 7 days. Never raises."""
    try:
        seconds = parse_duration_s(value)
        if seconds is not None:
            return cap_retry_after_s(seconds)
        when = parse_time(value, now=now)
        return None if when is None else cap_retry_after_s((when - now).total_seconds())
    except (OverflowError, ValueError, TypeError):
        return None


def next_utc_boundary(period: str, *, now: datetime) -> datetime | None:
    """The next start of a UTC calendar period (``daily``, ``weekly`` from Monday, ``monthly``)."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    key = period.strip().lower()
    if key in ("day", "daily"):
        return today + timedelta(days=1)
    if key in ("week", "weekly"):
        return today + timedelta(days=7 - today.weekday())
    if key in ("month", "monthly"):
        year, month = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        return today.replace(year=year, month=month, day=1)
    return None


# A date and time written inside a message: "reset at 2026-07-31 18:31:06", "Resets at
# 2026-09-01T22:00:00+08:00", "将在 2026-07-31T10:31:06.000Z 重置"; dashes or slashes, any zone or none.
_TIME_IN_TEXT = re.compile(
    r"(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)"
    r"\s*(Z|[+-]\d{2}:?\d{2}|UTC[+-]\d{1,2})?",
    re.IGNORECASE,
)


def find_time_in_text(text: str, *, now: datetime, tz: tzinfo = UTC) -> datetime | None:
    """The first date-time written in a message, in any of the wordings and languages upstreams use;
    a zone-less one is read in ``tz``. None when the message carries none."""
    found = _TIME_IN_TEXT.search(text)
    if found is None:
        return None
    year, month, day, clock, zone = found.groups()
    hours, _, rest = clock.partition(":")
    zone = (zone or "").upper()
    if zone.startswith("UTC"):
        sign, amount = zone[3], int(zone[4:])
        zone = f"{sign}{amount:02d}:00"
    return parse_time(f"{year}-{month}-{day}T{int(hours):02d}:{rest}{zone}", now=now, tz=tz)
