"""Kimi For Coding: weekly usage and the 5-hour window of ``/coding/v1/usages`` (numbers as strings
or numbers; the reset under ``resetTime``, ``resetAt`` or ``reset_at``).

A 403 ``access_terminated_error`` means two different things, told apart by its message:

| message | reading |
| --- | --- |
| a usage limit of the week ("weekly usage limit", "7-day", "seven-day") | ``quota_exhausted``, ``7d`` |
| a billing cycle, or a window it does not name ("the current window ends") | ``quota_exhausted``, no window |
| no quota wording ("only available for Coding Agents", "Access has been terminated.") | ``auth_failed`` |

Kimi may send the quota 403 for the 5-hour window, so a quota 403 re-reads usage.
"""

from __future__ import annotations

import re
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_dicts, as_float, as_str, dig, share_pct, window_name_for_seconds

WEEKLY = "7d"
RESET_KEYS = ("resetTime", "resetAt", "reset_at", "resets_at")
_QUOTA_WORDS = re.compile(r"usage limit|quota|limit (?:has been )?reached|billing cycle", re.IGNORECASE)
_WEEK_WORDS = re.compile(r"week|7-day|seven-day", re.IGNORECASE)
UNIT_S = {"TIME_UNIT_SECOND": 1, "TIME_UNIT_MINUTE": 60, "TIME_UNIT_HOUR": 3600, "TIME_UNIT_DAY": 86400}


def _counts_window(name: str, counts: object, now: datetime) -> Window | None:
    """100 × remaining / limit, where what is used bounds what remains (``used`` past ``limit`` is
    none left, whatever ``remaining`` says); None without a positive limit."""
    limit = as_float(dig(counts, "limit"))
    remaining = as_float(dig(counts, "remaining"))
    used = as_float(dig(counts, "used"))
    if limit is not None and used is not None:
        remaining = limit - used if remaining is None else min(remaining, limit - used)
    pct = share_pct(remaining, limit)
    if pct is None:
        return None
    reset_at = next((r for key in RESET_KEYS if (r := parse_time(dig(counts, key), now=now))), None)
    return Window(name, pct, reset_at)


class KimiCodingAdapter(BaseAdapter):
    kind = "kimi-coding"
    provider = "kimi-coding"
    auth_type = "apikey"
    default_base_url = "https://api.kimi.com"
    usage_path = "/coding/v1/usages"

    def read_usage(self, body: object, now: datetime) -> Reading:
        weekly = _counts_window(WEEKLY, dig(body, "usage"), now)
        windows = [weekly] if weekly else []
        problems = [] if weekly else ["no weekly usage limit/remaining"]
        for limit in as_dicts(dig(body, "limits")):
            duration = as_float(dig(limit, "window", "duration"))
            unit_s = UNIT_S.get(as_str(dig(limit, "window", "timeUnit")) or "")
            window = None
            if duration is not None and unit_s is not None:
                window = _counts_window(window_name_for_seconds(duration * unit_s), limit.get("detail"), now)
            if window is None:
                problems.append("a limits[] entry without a known window length or counts")
            else:
                windows.append(window)
        return poll_reading(now, windows, problems=problems)

    def classify(self, reply: ErrorReply) -> Failure:
        error_type, message = reply.error_type, reply.message
        if reply.status == 403 or error_type == "access_terminated_error":
            if _QUOTA_WORDS.search(message):
                # A billing cycle or "the current window" names no window; a usage re-read does.
                window = WEEKLY if _WEEK_WORDS.search(message) else None
                return Failure("quota_exhausted", window=window, detail=message)
            if error_type == "access_terminated_error":
                return Failure("auth_failed", detail=f"{error_type}: {message}")
        return reply.by_status(message or error_type)

    def wants_usage_recheck(self, status: int, failure: Failure) -> bool:
        return status == 403 and failure.classification == "quota_exhausted"
