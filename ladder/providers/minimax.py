"""MiniMax Coding / Token Plan: ``coding_plan/remains`` per model; ``usage_count`` is the *remaining* count.

Only text-model entries gate chat routing, and their 5-hour and weekly limits are the plan's: one
unscoped window each, the lowest over them. A text-model entry is any entry that does not name
another modality: ``MiniMax-M2.5``, ``M2.7-highspeed``, ``coding-plan-*``, the Token Plan's shared
``general`` bucket and entries without ``model_name`` all count; image, video, speech and music
entries do not. Model names change with every release; the modalities do not.
"""

from __future__ import annotations

import re
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading
from ladder.providers.timeparse import parse_time
from ladder.providers.values import JsonDict, as_dicts, as_float, as_str, clamp_pct, dig, share_pct

OTHER_MODALITY = re.compile(
    r"image|video|speech|audio|voice|tts|music|hailuo|t2v|i2v|s2v|vision", re.IGNORECASE
)
# (window, field prefix, reset field, relative-reset field): the interval is the 5-hour window.
WINDOW_FIELDS = (
    ("5h", "current_interval", "end_time", "remains_time"),
    ("7d", "current_weekly", "weekly_end_time", "weekly_remains_time"),
)
AUTH_CODES = (1004,)
RATE_LIMIT_CODES = (1002,)
EXHAUSTED = re.compile(r"\b2056\b")
_RESETS_AT = re.compile(r"resets at (\d{4}-\d{2}-\d{2}[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)", re.IGNORECASE)


def _status_code(body: object) -> float | None:
    return as_float(dig(body, "base_resp", "status_code"))


def _window(name: str, entry: JsonDict, prefix: str, end: str, remains: str, now: datetime) -> Window | None:
    """Prefer ``*_remaining_percent`` (may be a string); else usage_count / total_count."""
    pct = as_float(entry.get(f"{prefix}_remaining_percent"))
    if pct is None:
        pct = share_pct(
            as_float(entry.get(f"{prefix}_usage_count")), as_float(entry.get(f"{prefix}_total_count"))
        )
    if pct is None:
        return None
    reset_at = parse_time(entry.get(end), now=now) or parse_time(
        entry.get(remains), now=now, relative=True, relative_unit_s=0.001
    )
    return Window(name, clamp_pct(pct), reset_at)


class MiniMaxAdapter(BaseAdapter):
    kind = "minimax-coding"
    provider = "minimax"
    auth_type = "apikey"
    default_base_url = "https://api.minimax.io"
    usage_path = "/v1/api/openplatform/coding_plan/remains"
    usage_headers = {"Accept": "application/json", "Content-Type": "application/json"}

    def error_in_body(self, body: object) -> bool:
        return _status_code(body) not in (None, 0)

    def read_usage(self, body: object, now: datetime) -> Reading:
        entries = as_dicts(dig(body, "model_remains")) or as_dicts(dig(body, "data", "model_remains"))
        text_models = [e for e in entries if not OTHER_MODALITY.search(as_str(e.get("model_name")) or "")]
        if not text_models:
            return poll_reading(now, problems=["no text-model entry in model_remains"])
        windows: list[Window] = []
        for name, prefix, end, remains in WINDOW_FIELDS:
            found = [w for e in text_models if (w := _window(name, e, prefix, end, remains, now)) is not None]
            if found:
                windows.append(min(found, key=lambda w: w.remaining_pct))
        missing = (
            [] if any(w.name == "5h" for w in windows) else ["no 5h percentage or counts for the text models"]
        )
        return poll_reading(now, windows, problems=missing)

    def classify(self, reply: ErrorReply) -> Failure:
        message = reply.message
        if EXHAUSTED.search(message):
            lowered = message.lower()
            reset = _RESETS_AT.search(message)
            return Failure(
                "quota_exhausted",
                window="5h" if "5-hour" in lowered else ("7d" if "week" in lowered else None),
                reset_at=parse_time(reset[1], now=reply.now) if reset else None,
                detail=message,
            )
        code = _status_code(reply.body)
        text = as_str(dig(reply.body, "base_resp", "status_msg")) or ""
        if code in AUTH_CODES:
            return Failure("auth_failed", detail=f"base_resp {code:g}: {text}")
        if code in RATE_LIMIT_CODES:
            return Failure("rate_limited", detail=f"base_resp {code:g}: {text}")
        if 200 <= reply.status < 300 and code:
            return Failure("upstream_error", detail=f"base_resp {code:g}: {text}")
        return reply.by_status(message or text)
