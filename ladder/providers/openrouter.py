"""OpenRouter keys: the key's spend cap and the free daily requests of ``/api/v1/key``.

Two independent gates: the key cap applies to paid models only (a key limit does not block
``:free`` models), the free daily requests only to ``*:free`` models, resetting 00:00 UTC.
"""

from __future__ import annotations

from datetime import datetime

from ladder.domain.scopes import globs_not_ending_with
from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading, throttled
from ladder.providers.timeparse import next_utc_boundary, parse_time
from ladder.providers.values import as_dict, as_float, as_str, dig, lower_headers, share_pct

KEY_WINDOW = "key-limit"
FREE_WINDOW = "daily-requests"
FREE_SUFFIX = ":free"
FREE_MODELS = (f"*{FREE_SUFFIX}",)
# The key cap's scope; the dashboard shows it as "every model except *:free" (domain.scopes).
PAID_MODELS = globs_not_ending_with(FREE_SUFFIX)
# ``limit_reset`` → the usage field that counts that period's spend.
_PERIOD_FIELDS = {"day": "daily", "week": "weekly", "month": "monthly"}
_PERIOD_FIELDS |= {field: field for field in _PERIOD_FIELDS.values()}


def parse_key(body: object, now: datetime) -> Reading:
    data = as_dict(dig(body, "data"))
    if data is None:
        return poll_reading(now, problems=["no data object in the key answer"])
    windows: list[Window] = []
    problems: list[str] = []
    notes: list[str] = []
    if "limit" not in data:
        problems.append("no limit field")
    elif data["limit"] is None:
        notes.append("no key cap")
    else:
        limit, remaining = as_float(data["limit"]), as_float(data.get("limit_remaining"))
        period = as_str(data.get("limit_reset"))
        if remaining is None and limit is not None:
            # As CodexBar: the spend of the cap's period (usage_monthly for a monthly cap), else usage.
            used = as_float(data.get(f"usage_{_PERIOD_FIELDS.get((period or '').lower(), '')}"))
            used = used if used is not None else as_float(data.get("usage"))
            remaining = None if used is None else limit - used
        pct = share_pct(remaining, limit)
        if pct is None:
            problems.append("key limit without a positive limit and a numeric limit_remaining or usage")
        else:
            reset_at = next_utc_boundary(period, now=now) if period else None
            windows.append(Window(KEY_WINDOW, pct, reset_at, PAID_MODELS))
    free = data.get("free_model_daily_requests")
    free_pct = share_pct(as_float(dig(free, "remaining")), as_float(dig(free, "limit")))
    if free_pct is not None:
        windows.append(Window(FREE_WINDOW, free_pct, next_utc_boundary("daily", now=now), FREE_MODELS))
    else:
        notes.append("no free_model_daily_requests: :free models unverified")
    return poll_reading(now, windows, problems=problems, notes=notes)


class OpenRouterAdapter(BaseAdapter):
    kind = "openrouter"
    provider = "openrouter"
    auth_type = "apikey"
    default_base_url = "https://openrouter.ai"
    usage_path = "/api/v1/key"

    def read_usage(self, body: object, now: datetime) -> Reading:
        return parse_key(body, now)

    def classify(self, reply: ErrorReply) -> Failure:
        status, message = reply.status, reply.message
        metadata = as_dict(dig(reply.body, "error", "metadata")) or {}
        if "free-models-per-day" in message:
            relayed = lower_headers(
                {str(k): str(v) for k, v in (as_dict(metadata.get("headers")) or {}).items()}
            )
            reset = reply.headers.get("x-ratelimit-reset") or relayed.get("x-ratelimit-reset")
            return Failure(
                "quota_exhausted",
                window=FREE_WINDOW,
                reset_at=parse_time(reset, now=reply.now) or next_utc_boundary("daily", now=reply.now),
                retry_after_s=reply.wait_s,
                detail=message,
            )
        if status == 402 and as_str(metadata.get("limit_source")) == "openrouter_key_limit":
            return Failure("quota_exhausted", window=KEY_WINDOW, detail=message)
        if status == 402:
            # openrouter_credits: the balance is spent; a negative balance refuses even :free models.
            return Failure("quota_exhausted", detail=message or "HTTP 402")
        if status == 429:
            # Per-minute free limits and 429s relayed from an upstream provider are transient.
            upstream = as_str(metadata.get("provider_name"))
            return throttled(reply.wait_s, detail=f"{message} ({upstream})" if upstream else message)
        return reply.by_status(message)
