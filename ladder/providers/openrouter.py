"""OpenRouter keys: the key's spend cap and the free daily requests of ``/api/v1/key``.

Two independent gates: the key cap applies to paid models only (a key limit does not block
``:free`` models), the free daily requests only to ``*:free`` models, resetting 00:00 UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.scopes import globs_not_ending_with
from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import (
    BaseAdapter,
    ConnectionRef,
    Upstream,
    classify_by_status,
    header_retry_after_s,
    throttled,
)
from ladder.providers.timeparse import next_utc_boundary, parse_time
from ladder.providers.values import (
    as_dict,
    as_float,
    as_str,
    clamp_pct,
    decode_body,
    dig,
    error_fields,
    lower_headers,
)

KEY_PATH = "/api/v1/key"
KEY_WINDOW = "key-limit"
FREE_WINDOW = "daily-requests"
FREE_SUFFIX = ":free"
FREE_MODELS = (f"*{FREE_SUFFIX}",)
# The key cap's scope; the dashboard shows it as "every model except *:free" (domain.scopes).
PAID_MODELS = globs_not_ending_with(FREE_SUFFIX)
# ``limit_reset`` → the usage field that counts that period's spend.
_PERIOD_FIELDS = {
    "daily": "daily",
    "day": "daily",
    "weekly": "weekly",
    "week": "weekly",
    "monthly": "monthly",
    "month": "monthly",
}


def parse_key(body: object, now: datetime) -> Reading:
    data = as_dict(dig(body, "data"))
    if data is None:
        return Reading(now, (), "poll", verifiable=False, note="no data object in the key answer")
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
        if limit is None or limit <= 0 or remaining is None:
            problems.append("key limit without a positive limit and a numeric limit_remaining or usage")
        else:
            reset_at = next_utc_boundary(period, now=now) if period else None
            windows.append(Window(KEY_WINDOW, clamp_pct(100.0 * remaining / limit), reset_at, PAID_MODELS))
    free = data.get("free_model_daily_requests")
    free_limit, free_remaining = as_float(dig(free, "limit")), as_float(dig(free, "remaining"))
    if free_limit is not None and free_limit > 0 and free_remaining is not None:
        pct = clamp_pct(100.0 * free_remaining / free_limit)
        windows.append(Window(FREE_WINDOW, pct, next_utc_boundary("daily", now=now), FREE_MODELS))
    else:
        notes.append("no free_model_daily_requests: :free models unverified")
    if problems:
        return Reading(now, tuple(windows), "poll", verifiable=False, note="; ".join(problems + notes))
    return Reading(now, tuple(windows), "poll", note="; ".join(notes))


class OpenRouterAdapter(BaseAdapter):
    kind = "openrouter"
    provider = "openrouter"
    auth_type = "apikey"
    default_base_url = "https://openrouter.ai"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {"Authorization": f"Bearer {connection.credential}", "Accept": "application/json"}
        return parse_key(upstream.json("GET", KEY_PATH, headers=headers), now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        decoded = decode_body(body)
        _, _, message = error_fields(decoded)
        metadata = as_dict(dig(decoded, "error", "metadata")) or {}
        wait = header_retry_after_s(headers, now)
        if "free-models-per-day" in message:
            relayed = lower_headers(
                {str(k): str(v) for k, v in (as_dict(metadata.get("headers")) or {}).items()}
            )
            reset = lower_headers(headers).get("x-ratelimit-reset") or relayed.get("x-ratelimit-reset")
            return Failure(
                "quota_exhausted",
                window=FREE_WINDOW,
                reset_at=parse_time(reset, now=now) or next_utc_boundary("daily", now=now),
                retry_after_s=wait,
                detail=message,
            )
        limit_source = as_str(metadata.get("limit_source"))
        if status == 402 and limit_source == "openrouter_key_limit":
            return Failure("quota_exhausted", window=KEY_WINDOW, detail=message)
        if status == 402:
            # openrouter_credits: the balance is spent; a negative balance refuses even :free models.
            return Failure("quota_exhausted", detail=message or "HTTP 402")
        if status == 429:
            # Per-minute free limits and 429s relayed from an upstream provider are transient.
            upstream = as_str(metadata.get("provider_name"))
            return throttled(wait, detail=f"{message} ({upstream})" if upstream else message)
        return classify_by_status(status, headers, now, detail=message)
