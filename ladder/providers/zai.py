"""z.ai GLM Coding Plan: ``quota/limit`` windows; errors may arrive as a 200 with an error body.

``percentage`` is the *used* share, ``nextResetTime`` is epoch milliseconds, and times written
without a zone (the exhaustion messages) are UTC+8.

Business codes (docs.z.ai/api-reference/api-code and the bodies in quota-peers/zai-glm):

| code | meaning | reading |
| --- | --- | --- |
| 1308 | 5-hour usage limit reached ("Usage limit reached for 5 hour", Chinese too) | ``quota_exhausted`` |
| 1310 | weekly/monthly limit spent ("Weekly/Monthly Limit Exhausted", Chinese too) | ``quota_exhausted`` |
| 1316 | plan limit exhausted (5-hour, weekly or monthly, named in the message) | ``quota_exhausted`` |
| 1302, 1305 | high concurrency, service overloaded | ``rate_limited`` |
| 1113 | no balance or resource package (wrong endpoint for the key, or spent) | ``quota_exhausted`` |
| 1000-1004 | authentication failed | ``auth_failed`` |

The window is the one the message names (a number of hours, a week; the reading's ``7d``); the reset
is the time written in the message ("reset at", "Resets at", "将在 … 重置"), with or without a zone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading
from ladder.providers.timeparse import UTC_PLUS_8, find_time_in_text, parse_time
from ladder.providers.values import (
    as_bool,
    as_dicts,
    as_float,
    as_str,
    clamp_pct,
    dig,
    share_pct,
    window_name_for_seconds,
)

# Window length = number × unit. Unit 5 is the month of TIME_LIMIT (MCP tool calls), not a model window.
UNIT_S = {1: 86400, 3: 3600, 4: 86400, 6: 7 * 86400}
MODEL_LIMIT_TYPES = ("TOKENS_LIMIT", "CREDIT_LIMIT")
EXHAUSTED_CODES = ("1308", "1310", "1316", "1113")
TRANSIENT_CODES = ("1302", "1305")
AUTH_CODES = ("1000", "1001", "1002", "1003", "1004")
_HOURS = re.compile(r"(\d+)\s*(?:-\s*)?(?:hours?|小时)", re.IGNORECASE)
_WEEK = re.compile(r"week|每周|周", re.IGNORECASE)


def exhausted_window(message: str) -> str | None:
    """The window an exhaustion message names: ``5h`` for "5 hour"/"5 小时", ``7d`` for a week."""
    hours = _HOURS.search(message)
    if hours:
        return f"{hours[1]}h"
    return "7d" if _WEEK.search(message) else None


def _remaining_pct(limit: Mapping[str, object]) -> float | None:
    """From the counts when present (``usage`` is the total), else 100 − the used ``percentage``."""
    counted = share_pct(as_float(limit.get("remaining")), as_float(limit.get("usage")))
    used = as_float(limit.get("percentage"))
    return counted if counted is not None or used is None else clamp_pct(100.0 - used)


class ZaiAdapter(BaseAdapter):
    kind = "zai-glm"
    provider = "zai"
    auth_type = "apikey"
    default_base_url = "https://api.z.ai"
    usage_path = "/api/monitor/usage/quota/limit"

    def error_in_body(self, body: object) -> bool:
        """``success: false`` or a ``code`` other than 200 inside a 200 answer."""
        code = as_float(dig(body, "code"))
        return as_bool(dig(body, "success")) is False or (code is not None and code != 200)

    def read_usage(self, body: object, now: datetime) -> Reading:
        windows: list[Window] = []
        problems: list[str] = []
        for limit in as_dicts(dig(body, "data", "limits")):
            kind = as_str(limit.get("type"))
            if kind not in MODEL_LIMIT_TYPES:
                continue
            unit, number = as_float(limit.get("unit")), as_float(limit.get("number"))
            unit_s = UNIT_S.get(int(unit)) if unit is not None else None
            pct = _remaining_pct(limit)
            if unit_s is None or number is None or number <= 0 or pct is None:
                problems.append(f"{kind} with unit {unit}, number {number}: unknown window or no percentage")
                continue
            reset_at = parse_time(limit.get("nextResetTime"), now=now)
            windows.append(Window(window_name_for_seconds(number * unit_s), pct, reset_at))
        if not windows and not problems:
            problems.append("no TOKENS_LIMIT or CREDIT_LIMIT entry in data.limits")
        return poll_reading(now, windows, problems=problems)

    def classify(self, reply: ErrorReply) -> Failure:
        code, message = reply.code, reply.message
        if code in EXHAUSTED_CODES or message.lower().startswith("usage limit reached"):
            return Failure(
                "quota_exhausted",
                window=exhausted_window(message),
                reset_at=find_time_in_text(message, now=reply.now, tz=UTC_PLUS_8),
                detail=f"{code}: {message}",
            )
        if code in AUTH_CODES:
            return Failure("auth_failed", detail=f"{code}: {message}")
        if code in TRANSIENT_CODES:
            return Failure("rate_limited", detail=f"{code}: {message}")
        if 200 <= reply.status < 300 and self.error_in_body(reply.body):
            in_body = as_float(dig(reply.body, "code"))
            text = as_str(dig(reply.body, "msg")) or ""
            if in_body in (401, 403):
                return Failure("auth_failed", detail=f"in-body code {in_body:g}: {text}")
            return Failure("upstream_error", detail=f"in-body code {in_body}: {text}")
        return reply.by_status(f"{code}: {message}".strip(": "))
