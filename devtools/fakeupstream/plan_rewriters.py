"""One rewriter per kind whose quota a body shows: the plans (Claude, Codex, Copilot, Google, Kiro,
Cursor, z.ai, Kimi, MiniMax) and OpenRouter's key cap. Each sets every window it knows (and their
headers, where the kind sends some) to the quota's remaining percent and reset (``rewriters``)."""

from __future__ import annotations

import math
import re
from datetime import UTC, timedelta, timezone
from typing import Any

from devtools.fakeupstream.rewriting import (
    Quota,
    Served,
    as_dict,
    dict_at,
    dicts,
    epoch_ms,
    epoch_s,
    go_duration,
    iso_like,
    like,
    number,
    reset_headers,
    share,
)

_ZAI_TEXT_ZONE = timezone(timedelta(hours=8))  # z.ai writes zone-less reset times in UTC+8


def claude_oauth(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for key, window in body.items():
        win = as_dict(window)
        is_window = key in ("five_hour", "seven_day") or key.startswith("seven_day_")
        if win is None or "utilization" not in win or not is_window:
            continue
        win["utilization"] = float(round(quota.used_pct, 2))
        if quota.reset_at and "resets_at" in win:
            win["resets_at"] = iso_like(win["resets_at"], quota.reset_at)
    for limit in dicts(body.get("limits")):
        if "percent" in limit:
            limit["percent"] = like(limit["percent"], quota.used_pct)
        if quota.reset_at and "resets_at" in limit:
            limit["resets_at"] = iso_like(limit["resets_at"], quota.reset_at)
    headers = served.headers
    prefix = "anthropic-ratelimit-unified-"
    spent = quota.remaining_pct <= 0
    for window in ("5h", "7d"):
        if f"{prefix}{window}-utilization" in headers:
            headers[f"{prefix}{window}-utilization"] = f"{quota.used_pct / 100:.2f}"
        if f"{prefix}{window}-status" in headers:
            headers[f"{prefix}{window}-status"] = "rejected" if spent else "allowed"
    if f"{prefix}status" in headers and f"{prefix}overage-in-use" not in headers:
        headers[f"{prefix}status"] = "rejected" if spent else "allowed"
    if quota.reset_at:
        reset = str(epoch_s(quota.reset_at))
        reset_headers(headers, [f"{prefix}5h-reset", f"{prefix}7d-reset", f"{prefix}reset"], lambda _: reset)


def _codex_window(window: dict[str, Any], quota: Quota) -> None:
    if "used_percent" in window:
        window["used_percent"] = like(window["used_percent"], quota.used_pct)
    if quota.reset_at:
        if "reset_at" in window:
            window["reset_at"] = epoch_s(quota.reset_at)
        if "reset_after_seconds" in window:
            window["reset_after_seconds"] = math.ceil(quota.seconds_to_reset or 0)


def _codex_rate_limit(rate_limit: dict[str, Any] | None, quota: Quota) -> None:
    if rate_limit is None:
        return
    for key in ("primary_window", "secondary_window"):
        window = as_dict(rate_limit.get(key))
        if window is not None:
            _codex_window(window, quota)
    if "allowed" in rate_limit:
        rate_limit["allowed"] = quota.remaining_pct > 0
    if "limit_reached" in rate_limit:
        rate_limit["limit_reached"] = quota.remaining_pct <= 0


def codex_chatgpt(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    _codex_rate_limit(as_dict(body.get("rate_limit")), quota)
    for extra in dicts(body.get("additional_rate_limits")):
        _codex_rate_limit(as_dict(extra.get("rate_limit")), quota)
    error = dict_at(body, "error")
    if error is not None and quota.reset_at:
        if "resets_at" in error:
            error["resets_at"] = epoch_s(quota.reset_at)
        if "resets_in_seconds" in error:
            error["resets_in_seconds"] = math.ceil(quota.seconds_to_reset or 0)
    headers = served.headers
    windows = ("primary", "secondary")
    for window in windows:
        if f"x-codex-{window}-used-percent" in headers:
            headers[f"x-codex-{window}-used-percent"] = str(round(quota.used_pct))
    if quota.reset_at:
        reset = str(epoch_s(quota.reset_at))
        wait = str(math.ceil(quota.seconds_to_reset or 0))
        reset_headers(headers, [f"x-codex-{w}-reset-at" for w in windows], lambda _: reset)
        reset_headers(headers, [f"x-codex-{w}-reset-after-seconds" for w in windows], lambda _: wait)


def copilot(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for snapshot in (as_dict(body.get("quota_snapshots")) or {}).values():
        snap = as_dict(snapshot)
        if snap is None or snap.get("unlimited") is True:
            continue
        entitlement = number(snap.get("entitlement")) or 0.0
        remaining = round(share(entitlement, quota.remaining_pct))
        snap["percent_remaining"] = float(round(quota.remaining_pct, 4))
        if "remaining" in snap:
            snap["remaining"] = remaining
        if "quota_remaining" in snap:
            snap["quota_remaining"] = float(remaining)
        if "credits_used" in snap:
            snap["credits_used"] = round(entitlement) - remaining
        if "has_quota" in snap:
            snap["has_quota"] = remaining > 0
        if "timestamp_utc" in snap:
            snap["timestamp_utc"] = iso_like(snap["timestamp_utc"], quota.now)
    if quota.reset_at:
        if "quota_reset_date_utc" in body:
            body["quota_reset_date_utc"] = iso_like(body["quota_reset_date_utc"], quota.reset_at)
        if "quota_reset_date" in body:
            body["quota_reset_date"] = quota.reset_at.astimezone(UTC).date().isoformat()


def _google_exhaustion(body: dict[str, Any], quota: Quota) -> None:
    error = dict_at(body, "error")
    if error is None or quota.reset_at is None:
        return
    wait = quota.seconds_to_reset or 0.0
    for detail in dicts(error.get("details")):
        metadata = as_dict(detail.get("metadata"))
        if detail.get("reason") == "QUOTA_EXHAUSTED" and metadata is not None:
            metadata["quotaResetTimeStamp"] = iso_like(metadata.get("quotaResetTimeStamp"), quota.reset_at)
            metadata["quotaResetDelay"] = go_duration(math.ceil(wait))
            if isinstance(error.get("message"), str):
                error["message"] = re.sub(
                    r"reset after \S+?\.", f"reset after {go_duration(math.ceil(wait))}.", error["message"]
                )
        if "retryDelay" in detail:
            detail["retryDelay"] = f"{math.ceil(wait)}s"


def gemini_cli(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for bucket in dicts(body.get("buckets")):
        if "remainingFraction" in bucket:
            bucket["remainingFraction"] = round(quota.remaining_pct / 100, 4)
        if quota.reset_at and "resetTime" in bucket:
            bucket["resetTime"] = iso_like(bucket["resetTime"], quota.reset_at)
    _google_exhaustion(body, quota)


def _relative_description(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours = rest // 3600
    return f"Resets in {days}d {hours}h" if days else f"Resets in {hours}h"


def antigravity(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for model in (as_dict(body.get("models")) or {}).values():
        info = dict_at(model, "quotaInfo")
        if info is None or (as_dict(model) or {}).get("isInternal") is True:
            continue
        info["remainingFraction"] = round(quota.remaining_pct / 100, 4)
        if quota.reset_at and "resetTime" in info:
            info["resetTime"] = iso_like(info["resetTime"], quota.reset_at)
    for group in dicts((dict_at(body, "response") or {}).get("groups")):
        for bucket in dicts(group.get("buckets")):
            remaining = as_dict(bucket.get("remaining"))
            if remaining is not None:
                remaining["remainingFraction"] = round(quota.remaining_pct / 100, 4)
            if quota.reset_at and "description" in bucket:
                bucket["description"] = _relative_description(quota.seconds_to_reset or 0)
    _google_exhaustion(body, quota)


def kiro(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for entry in dicts(body.get("usageBreakdownList")):
        if entry.get("resourceType") != "CREDIT":
            continue
        limit = number(entry.get("usageLimitWithPrecision")) or number(entry.get("usageLimit")) or 0.0
        overages = number(entry.get("currentOveragesWithPrecision")) or 0.0
        used = round(share(limit, quota.used_pct) + overages, 2)
        entry["currentUsageWithPrecision"] = used
        if "currentUsage" in entry:
            entry["currentUsage"] = round(used)
        if quota.reset_at and "nextDateReset" in entry:
            entry["nextDateReset"] = float(epoch_s(quota.reset_at))
    if quota.reset_at:
        if "nextDateReset" in body:
            body["nextDateReset"] = float(epoch_s(quota.reset_at))
        if "daysUntilReset" in body:
            body["daysUntilReset"] = math.ceil((quota.seconds_to_reset or 0) / 86400)


def cursor(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    used_pct = float(round(quota.used_pct, 1))
    for plan in filter(None, (dict_at(body, "individualUsage", "plan"), dict_at(body, "planUsage"))):
        limit = number(plan.get("limit")) or 0.0
        used = round(share(limit, quota.used_pct))
        for key in ("used", "totalSpend"):
            if key in plan:
                plan[key] = used
        if "remaining" in plan:
            plan["remaining"] = round(limit) - used
        breakdown = as_dict(plan.get("breakdown"))
        if breakdown is not None:
            breakdown["included"] = used
            breakdown["total"] = used + round(number(breakdown.get("bonus")) or 0)
        for key in ("autoPercentUsed", "apiPercentUsed", "totalPercentUsed"):
            if key in plan:
                plan[key] = used_pct
    for key in ("autoModelSelectedDisplayMessage", "namedModelSelectedDisplayMessage"):
        if isinstance(body.get(key), str):
            body[key] = re.sub(r"\d+(\.\d+)?%", f"{round(quota.used_pct)}%", body[key])
    if quota.reset_at and "billingCycleEnd" in body:
        end = body["billingCycleEnd"]
        is_millis = isinstance(end, str) and end.isdigit()
        body["billingCycleEnd"] = (
            str(epoch_ms(quota.reset_at)) if is_millis else iso_like(end, quota.reset_at)
        )


def zai_glm(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for limit in dicts((dict_at(body, "data") or {}).get("limits")):
        if limit.get("type") not in ("TOKENS_LIMIT", "CREDIT_LIMIT"):
            continue
        limit["percentage"] = like(limit.get("percentage", 0), quota.used_pct)
        total = number(limit.get("usage"))
        if total is not None and "currentValue" in limit:
            limit["currentValue"] = round(share(total, quota.used_pct))
            if "remaining" in limit:
                limit["remaining"] = round(total) - limit["currentValue"]
        if quota.reset_at and "nextResetTime" in limit:
            limit["nextResetTime"] = epoch_ms(quota.reset_at)
    error = dict_at(body, "error")
    if error is not None and quota.reset_at and isinstance(error.get("message"), str):
        local = quota.reset_at.astimezone(_ZAI_TEXT_ZONE).strftime("%Y-%m-%d %H:%M:%S")
        error["message"] = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", local, error["message"])


def _kimi_window(window: dict[str, Any] | None, quota: Quota) -> None:
    if window is None:
        return
    limit = number(window.get("limit"))
    if limit is not None:
        used = round(share(limit, quota.used_pct))
        if "used" in window:
            window["used"] = like(window["used"], used)
        if "remaining" in window:
            window["remaining"] = like(window["remaining"], round(limit) - used)
    if quota.reset_at and "resetTime" in window:
        window["resetTime"] = iso_like(window["resetTime"], quota.reset_at)


def kimi_coding(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    _kimi_window(dict_at(body, "usage"), quota)
    for limit in dicts(body.get("limits")):
        _kimi_window(dict_at(limit, "detail"), quota)


def minimax_coding(served: Served, quota: Quota) -> None:
    body = as_dict(served.body) or {}
    for model in dicts((dict_at(body, "data") or {}).get("model_remains")):
        for prefix, end_key, remains_key in (
            ("current_interval_", "end_time", "remains_time"),
            ("current_weekly_", "weekly_end_time", "weekly_remains_time"),
        ):
            total = number(model.get(f"{prefix}total_count"))
            if total is not None and f"{prefix}usage_count" in model:
                # MiniMax names the *remaining* count usage_count.
                model[f"{prefix}usage_count"] = round(share(total, quota.remaining_pct))
            percent_key = f"{prefix}remaining_percent"
            if percent_key in model:
                model[percent_key] = like(model[percent_key], quota.remaining_pct)
            if quota.reset_at:
                if end_key in model:
                    model[end_key] = epoch_ms(quota.reset_at)
                if remains_key in model:
                    model[remains_key] = round((quota.seconds_to_reset or 0) * 1000)
    error = dict_at(body, "error")
    if error is not None and quota.reset_at and isinstance(error.get("message"), str):
        error["message"] = re.sub(
            r"resets at (\S+)",
            lambda m: "resets at " + iso_like(m[1], quota.reset_at or quota.now),
            error["message"],
        )


def openrouter(served: Served, quota: Quota) -> None:
    data = dict_at(served.body, "data") or {}
    limit = number(data.get("limit"))
    if limit is not None and "limit_remaining" in data:
        data["limit_remaining"] = round(share(limit, quota.remaining_pct), 2)
    free = as_dict(data.get("free_model_daily_requests"))
    free_limit = number((free or {}).get("limit"))
    if free is not None and free_limit is not None:
        free["remaining"] = round(share(free_limit, quota.remaining_pct))
        free["used"] = round(free_limit) - free["remaining"]
