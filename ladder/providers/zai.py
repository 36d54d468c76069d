"""z.ai GLM Coding Plan: ``quota/limit`` windows; errors may arrive as a 200 with an error body.

``percentage`` is the *used* share, ``nextResetTime`` is epoch milliseconds, and times written
without a zone (the 1308 message) are UTC+8.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, FetchError, Upstream, classify_by_status
from ladder.providers.timeparse import UTC_PLUS_8, parse_time
from ladder.providers.values import (
    as_bool,
    as_dicts,
    as_float,
    as_str,
    clamp_pct,
    decode_body,
    dig,
    error_fields,
    window_name_for_seconds,
)

USAGE_PATH = "/api/monitor/usage/quota/limit"
# Window length = number × unit. Unit 5 is the month of TIME_LIMIT (MCP tool calls), not a model window.
UNIT_S = {1: 86400, 3: 3600, 4: 86400, 6: 7 * 86400}
MODEL_LIMIT_TYPES = ("TOKENS_LIMIT", "CREDIT_LIMIT")
EXHAUSTED_CODES = ("1308",)
TRANSIENT_CODES = ("1302", "1305")
_FOR_HOURS = re.compile(r"for (\d+) hours?", re.IGNORECASE)
_RESET_AT = re.compile(r"reset at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?)", re.IGNORECASE)


def body_error(body: object) -> bool:
    """``success: false`` or a ``code`` other than 200 inside a 200 answer."""
    success = as_bool(dig(body, "success"))
    code = as_float(dig(body, "code"))
    return success is False or (code is not None and code != 200)


def _remaining_pct(limit: Mapping[str, object]) -> float | None:
    """From the counts when present (``usage`` is the total), else 100 − the used ``percentage``."""
    total, remaining = as_float(limit.get("usage")), as_float(limit.get("remaining"))
    if total is not None and total > 0 and remaining is not None:
        return clamp_pct(100.0 * remaining / total)
    used = as_float(limit.get("percentage"))
    return None if used is None else clamp_pct(100.0 - used)


def parse_quota_limit(body: object, now: datetime) -> Reading:
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
        windows.append(
            Window(
                window_name_for_seconds(number * unit_s), pct, parse_time(limit.get("nextResetTime"), now=now)
            )
        )
    if problems or not windows:
        note = "; ".join(problems) or "no TOKENS_LIMIT or CREDIT_LIMIT entry in data.limits"
        return Reading(now, tuple(windows), "poll", verifiable=False, note=note)
    return Reading(now, tuple(windows), "poll")


class ZaiAdapter(BaseAdapter):
    kind = "zai-glm"
    provider = "zai"
    auth_type = "apikey"
    default_base_url = "https://api.z.ai"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {"Authorization": f"Bearer {connection.credential}", "Accept": "application/json"}
        body = upstream.json("GET", USAGE_PATH, headers=headers)
        if body_error(body):
            raise FetchError(self.classify_failure(200, {}, body, now), status=200)
        return parse_quota_limit(body, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        decoded = decode_body(body)
        _, code, message = error_fields(decoded)
        if code in EXHAUSTED_CODES or message.lower().startswith("usage limit reached"):
            hours = _FOR_HOURS.search(message)
            reset = _RESET_AT.search(message)
            return Failure(
                "quota_exhausted",
                window=f"{hours[1]}h" if hours else ("7d" if "week" in message.lower() else None),
                reset_at=parse_time(reset[1], now=now, tz=UTC_PLUS_8) if reset else None,
                detail=f"{code}: {message}",
            )
        if code in TRANSIENT_CODES:
            return Failure("rate_limited", detail=f"{code}: {message}")
        if 200 <= status < 300 and body_error(decoded):
            in_body = as_float(dig(decoded, "code"))
            text = as_str(dig(decoded, "msg")) or ""
            if in_body in (401, 403):
                return Failure("auth_failed", detail=f"in-body code {in_body:g}: {text}")
            return Failure("upstream_error", detail=f"in-body code {in_body}: {text}")
        return classify_by_status(status, headers, now, detail=f"{code}: {message}".strip(": "))
