"""Move every absolute time in a fixture by one delta, leaving relative durations alone.

Recognised absolute times:

* ISO-8601 date-times anywhere in a string (also inside message text and URLs), with a zone
  (``Z``, ``+00:00``, ``+0000``, ``+08``) or without one (zone-less stays zone-less), with ``T`` or
  a space between date and time, with any number of fractional digits (the original precision is
  kept; finer parts of the delta are truncated);
* date-only strings (``"2026-10-01"``), the whole string, when within ``window`` of the fixture time
  (moved by the delta rounded to whole days);
* epoch seconds and epoch milliseconds: JSON numbers, numeric strings (``"1788271200"``,
  ``"1790812800.0"``) and 10- or 13-digit runs inside text (``"exp=1788265800;"``), when within
  ``window`` of the fixture time — so counts, limits, balances and ids are never taken for times.

Relative durations (``retry-after: 60``, ``1m26.4s``, ``reset_after_seconds: 7200``) are small
numbers or duration strings, so none of the rules above matches them.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any, TypeAlias, TypeVar, cast

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
Document = TypeVar("Document")

DEFAULT_WINDOW = timedelta(days=400)

_ISO = (
    r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})(?P<sep>[T ])(?P<h>\d{2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2})(?:\.(?P<frac>\d+))?)?(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?"
)
_EPOCH = r"(?P<epoch>\d{13}|\d{10})(?:\.(?P<efrac>\d+))?"
_TOKEN_RE = re.compile(rf"(?<!\d){_ISO}(?!\d)|(?<![\w.]){_EPOCH}(?!\w|\.\d)")
_ISO_RE = re.compile(_ISO)
_DATE_ONLY_RE = re.compile(r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})")
_NS_PER_S = 1_000_000_000


def whole_seconds(delta: timedelta) -> timedelta:
    """The delta floored to whole seconds, so that epoch seconds and second-precision ISO shift exactly."""
    return timedelta(seconds=delta // timedelta(seconds=1))


def shift_times(
    obj: Document, delta: timedelta, fixture_time: datetime, *, window: timedelta = DEFAULT_WINDOW
) -> Document:
    """A copy of the JSON document ``obj`` with every absolute time moved by ``delta``.

    See the module docstring for what counts as an absolute time; the copy has the same shape.
    """
    return cast(Document, _Shifter(delta, fixture_time, window).walk(cast(Any, obj)))


def format_like(template: str, moment: datetime) -> str:
    """``moment`` written the way ``template`` writes its time (separator, precision, zone style).

    A zone-less template is read as UTC. A template that is not ISO gives ``…Z`` with seconds.
    """
    match = _ISO_RE.fullmatch(template)
    if match is None:
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    zone = match["zone"]
    local = moment.astimezone(_zone_of(zone)) if moment.tzinfo else moment
    frac = match["frac"] or ""
    return _format(
        local.replace(tzinfo=None),
        local.microsecond * 1000,
        sep=match["sep"],
        with_seconds=match["s"] is not None,
        frac_digits=len(frac),
        zone=zone or "",
        extra_frac="",
    )


def _zone_of(zone: str | None) -> timezone:
    if not zone or zone == "Z":
        return UTC
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) >= 4 else 0)
    return timezone(sign * timedelta(minutes=minutes))


def _format(
    wall: datetime,
    ns: int,
    *,
    sep: str,
    with_seconds: bool,
    frac_digits: int,
    zone: str,
    extra_frac: str,
) -> str:
    text = f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d}{sep}{wall.hour:02d}:{wall.minute:02d}"
    if with_seconds:
        text += f":{wall.second:02d}"
        if frac_digits:
            text += "." + f"{ns:09d}"[: min(frac_digits, 9)] + extra_frac
    return text + zone


class _Shifter:
    def __init__(self, delta: timedelta, fixture_time: datetime, window: timedelta) -> None:
        self.delta_us = delta // timedelta(microseconds=1)
        self.center_s = fixture_time.timestamp()
        self.window_s = window.total_seconds()

    def walk(self, obj: JSON) -> JSON:
        if isinstance(obj, dict):
            return {key: self.walk(value) for key, value in obj.items()}
        if isinstance(obj, list):
            return [self.walk(item) for item in obj]
        if isinstance(obj, bool) or obj is None:
            return obj
        if isinstance(obj, int):
            return self._shift_int(obj)
        if isinstance(obj, float):
            return self._shift_float(obj)
        return self._shift_str(obj)

    def _is_seconds(self, value: float) -> bool:
        return abs(value - self.center_s) <= self.window_s

    def _is_millis(self, value: float) -> bool:
        return abs(value - self.center_s * 1000) <= self.window_s * 1000

    def _shift_int(self, value: int) -> int:
        if self._is_seconds(value):
            return value + self.delta_us // 1_000_000
        if self._is_millis(value):
            return value + self.delta_us // 1000
        return value

    def _shift_float(self, value: float) -> float:
        if self._is_seconds(value):
            return value + self.delta_us / 1_000_000
        if self._is_millis(value):
            return value + self.delta_us / 1000
        return value

    def _shift_str(self, text: str) -> str:
        if _DATE_ONLY_RE.fullmatch(text):
            return self._shift_date_only(text)
        return _TOKEN_RE.sub(self._shift_token, text)

    def _shift_date_only(self, text: str) -> str:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return text
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if not self._is_seconds(midnight.timestamp()):
            return text
        # to the nearest day: a date-only reset cannot take the hours of the delta
        return (midnight + timedelta(microseconds=self.delta_us) + timedelta(hours=12)).date().isoformat()

    def _shift_token(self, match: re.Match[str]) -> str:
        if match["epoch"] is not None:
            return self._shift_epoch_token(match["epoch"], match["efrac"] or "")
        return self._shift_iso_token(match)

    def _shift_epoch_token(self, digits: str, frac: str) -> str:
        value = int(digits)
        if len(digits) == 10 and self._is_seconds(value):
            units_per_us = 1_000_000
        elif len(digits) == 13 and self._is_millis(value):
            units_per_us = 1000
        else:
            return digits + ("." + frac if frac else "")
        scale = 10 ** len(frac)
        # delta in units of 10**-len(frac) of the token's unit (seconds or milliseconds), floored
        delta_units = (self.delta_us * scale) // units_per_us
        total = value * scale + (int(frac) if frac else 0) + delta_units
        if not frac:
            return str(total)
        whole, part = divmod(total, scale)
        return f"{whole}.{part:0{len(frac)}d}"

    def _shift_iso_token(self, match: re.Match[str]) -> str:
        try:
            wall = datetime(
                int(match["y"]),
                int(match["mo"]),
                int(match["d"]),
                int(match["h"]),
                int(match["mi"]),
                int(match["s"] or 0),
                tzinfo=UTC,  # wall-clock arithmetic only: UTC has no DST, the zone suffix is kept as text
            )
        except ValueError:
            return match[0]
        frac = match["frac"] or ""
        ns = int(frac[:9].ljust(9, "0")) if frac else 0
        extra_s, ns = divmod(ns + self.delta_us * 1000, _NS_PER_S)
        try:
            shifted = wall + timedelta(seconds=extra_s)
        except OverflowError:
            return match[0]
        return _format(
            shifted,
            ns,
            sep=match["sep"],
            with_seconds=match["s"] is not None,
            frac_digits=len(frac),
            zone=match["zone"] or "",
            extra_frac=frac[9:],
        )
