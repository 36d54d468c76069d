"""Per kind: rewrite a (time-shifted) fixture response so that the plan shows a chosen remaining %.

Every rewriter sets *all* plan windows it knows on the response (the 5-hour and the weekly window
alike) to the same remaining percent and, when a reset moment is given, to the same reset; it only
touches fields that are present, so the same function serves poll responses, passive-header
responses and the exhaustion error of its kind. Fields that are not windows (extra-usage credits,
code-review limits, balances, MCP/search quotas) are left as the fixture has them.

Limits of the rewrite:

* ``openrouter``: the key cap resets on a named period (``limit_reset: "monthly"``), so only the
  remaining amount follows the scenario, never the reset.
* ``moonshot-api`` (balance only) and ``qwen-oauth`` (no quota endpoint) have no window to rewrite;
  ``drain`` and ``set`` are refused for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from devtools.fakeupstream.timeshift import format_like

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZAI_TEXT_ZONE = timezone(timedelta(hours=8))  # z.ai writes zone-less reset times in UTC+8


@dataclass(frozen=True)
class Quota:
    remaining_pct: float
    reset_at: datetime | None
    now: datetime

    @property
    def used_pct(self) -> float:
        return 100.0 - self.remaining_pct

    @property
    def seconds_to_reset(self) -> float | None:
        if self.reset_at is None:
            return None
        return max(0.0, (self.reset_at - self.now).total_seconds())


@dataclass
class Served:
    """A response being prepared: mutable, a private copy."""

    status: int
    headers: dict[str, str]
    body: Any


RewriteFn = Callable[[Served, Quota], None]


@dataclass(frozen=True)
class KindRewriter:
    rewrite: RewriteFn
    # Calls that read the quota; an exhaustion error never replaces them (they answer 0 % instead).
    poll_calls: frozenset[str]


UNSUPPORTED = {
    "moonshot-api": "balance only: no quota window to rewrite",
    "qwen-oauth": "no quota endpoint in the fixture",
}


def apply_exhaustion_extras(served: Served, quota: Quota) -> None:
    """On an error served because the plan is spent, make ``retry-after`` point at the reset."""
    wait_s = quota.seconds_to_reset
    if wait_s is not None and "retry-after" in served.headers:
        served.headers["retry-after"] = str(math.ceil(wait_s))


# --- small helpers ---------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _path(value: Any, *keys: str) -> dict[str, Any] | None:
    for key in keys:
        node = _dict(value)
        if node is None:
            return None
        value = node.get(key)
    return _dict(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _like(template: Any, value: float) -> Any:
    """``value`` with the JSON type of ``template`` (int stays int, numeric string stays string)."""
    if isinstance(template, int) and not isinstance(template, bool):
        return round(value)
    if isinstance(template, str):
        return str(round(value)) if "." not in template else f"{value:.{len(template.split('.')[1])}f}"
    return float(round(value, 4))


def _share(total: float, pct: float) -> float:
    return total * pct / 100.0


def _epoch_s(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(seconds=1)


def _epoch_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _iso(template: Any, moment: datetime) -> str:
    return format_like(template if isinstance(template, str) else "2000-01-01T00:00:00Z", moment)


def go_duration(seconds: float) -> str:
    """A Go ``time.Duration`` string (``1m26.4s``, ``644ms``, ``6m0s``), as Groq and OpenAI send."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:.3f}".rstrip("0").rstrip(".") + "ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    secs_text = f"{secs:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{int(hours)}h{int(minutes)}m{secs_text}s"
    if minutes:
        return f"{int(minutes)}m{secs_text}s"
    return f"{secs_text}s"


def _remaining_headers(headers: dict[str, str], pairs: list[tuple[str, str]], pct: float) -> None:
    for limit_key, remaining_key in pairs:
        limit = _number(headers.get(limit_key))
        if limit is not None and remaining_key in headers:
            headers[remaining_key] = str(round(_share(limit, pct)))


def _reset_headers(headers: dict[str, str], keys: list[str], write: Callable[[str], str]) -> None:
    for key in keys:
        if key in headers:
            headers[key] = write(headers[key])


# --- one rewriter per kind -------------------------------------------------------------------


def _claude_oauth(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for key, window in body.items():
        win = _dict(window)
        is_window = key in ("five_hour", "seven_day") or key.startswith("seven_day_")
        if win is None or "utilization" not in win or not is_window:
            continue
        win["utilization"] = float(round(quota.used_pct, 2))
        if quota.reset_at and "resets_at" in win:
            win["resets_at"] = _iso(win["resets_at"], quota.reset_at)
    for limit in _dicts(body.get("limits")):
        if "percent" in limit:
            limit["percent"] = _like(limit["percent"], quota.used_pct)
        if quota.reset_at and "resets_at" in limit:
            limit["resets_at"] = _iso(limit["resets_at"], quota.reset_at)
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
        reset = str(_epoch_s(quota.reset_at))
        _reset_headers(headers, [f"{prefix}5h-reset", f"{prefix}7d-reset", f"{prefix}reset"], lambda _: reset)


def _codex_window(window: dict[str, Any], quota: Quota) -> None:
    if "used_percent" in window:
        window["used_percent"] = _like(window["used_percent"], quota.used_pct)
    if quota.reset_at:
        if "reset_at" in window:
            window["reset_at"] = _epoch_s(quota.reset_at)
        if "reset_after_seconds" in window:
            window["reset_after_seconds"] = math.ceil(quota.seconds_to_reset or 0)


def _codex_rate_limit(rate_limit: dict[str, Any] | None, quota: Quota) -> None:
    if rate_limit is None:
        return
    for key in ("primary_window", "secondary_window"):
        window = _dict(rate_limit.get(key))
        if window is not None:
            _codex_window(window, quota)
    if "allowed" in rate_limit:
        rate_limit["allowed"] = quota.remaining_pct > 0
    if "limit_reached" in rate_limit:
        rate_limit["limit_reached"] = quota.remaining_pct <= 0


def _codex_chatgpt(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    _codex_rate_limit(_dict(body.get("rate_limit")), quota)
    for extra in _dicts(body.get("additional_rate_limits")):
        _codex_rate_limit(_dict(extra.get("rate_limit")), quota)
    error = _path(body, "error")
    if error is not None and quota.reset_at:
        if "resets_at" in error:
            error["resets_at"] = _epoch_s(quota.reset_at)
        if "resets_in_seconds" in error:
            error["resets_in_seconds"] = math.ceil(quota.seconds_to_reset or 0)
    headers = served.headers
    windows = ("primary", "secondary")
    for window in windows:
        if f"x-codex-{window}-used-percent" in headers:
            headers[f"x-codex-{window}-used-percent"] = str(round(quota.used_pct))
    if quota.reset_at:
        reset = str(_epoch_s(quota.reset_at))
        wait = str(math.ceil(quota.seconds_to_reset or 0))
        _reset_headers(headers, [f"x-codex-{w}-reset-at" for w in windows], lambda _: reset)
        _reset_headers(headers, [f"x-codex-{w}-reset-after-seconds" for w in windows], lambda _: wait)


def _copilot(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for snapshot in (_dict(body.get("quota_snapshots")) or {}).values():
        snap = _dict(snapshot)
        if snap is None or snap.get("unlimited") is True:
            continue
        entitlement = _number(snap.get("entitlement")) or 0.0
        remaining = round(_share(entitlement, quota.remaining_pct))
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
            snap["timestamp_utc"] = _iso(snap["timestamp_utc"], quota.now)
    if quota.reset_at:
        if "quota_reset_date_utc" in body:
            body["quota_reset_date_utc"] = _iso(body["quota_reset_date_utc"], quota.reset_at)
        if "quota_reset_date" in body:
            body["quota_reset_date"] = quota.reset_at.astimezone(UTC).date().isoformat()


def _google_exhaustion(body: dict[str, Any], quota: Quota) -> None:
    error = _path(body, "error")
    if error is None or quota.reset_at is None:
        return
    wait = quota.seconds_to_reset or 0.0
    for detail in _dicts(error.get("details")):
        metadata = _dict(detail.get("metadata"))
        if detail.get("reason") == "QUOTA_EXHAUSTED" and metadata is not None:
            metadata["quotaResetTimeStamp"] = _iso(metadata.get("quotaResetTimeStamp"), quota.reset_at)
            metadata["quotaResetDelay"] = go_duration(math.ceil(wait))
            if isinstance(error.get("message"), str):
                error["message"] = re.sub(
                    r"reset after \S+?\.", f"reset after {go_duration(math.ceil(wait))}.", error["message"]
                )
        if "retryDelay" in detail:
            detail["retryDelay"] = f"{math.ceil(wait)}s"


def _gemini_cli(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for bucket in _dicts(body.get("buckets")):
        if "remainingFraction" in bucket:
            bucket["remainingFraction"] = round(quota.remaining_pct / 100, 4)
        if quota.reset_at and "resetTime" in bucket:
            bucket["resetTime"] = _iso(bucket["resetTime"], quota.reset_at)
    _google_exhaustion(body, quota)


def _relative_description(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours = rest // 3600
    return f"Resets in {days}d {hours}h" if days else f"Resets in {hours}h"


def _antigravity(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for model in (_dict(body.get("models")) or {}).values():
        info = _path(model, "quotaInfo")
        if info is None or (_dict(model) or {}).get("isInternal") is True:
            continue
        info["remainingFraction"] = round(quota.remaining_pct / 100, 4)
        if quota.reset_at and "resetTime" in info:
            info["resetTime"] = _iso(info["resetTime"], quota.reset_at)
    for group in _dicts((_path(body, "response") or {}).get("groups")):
        for bucket in _dicts(group.get("buckets")):
            remaining = _dict(bucket.get("remaining"))
            if remaining is not None:
                remaining["remainingFraction"] = round(quota.remaining_pct / 100, 4)
            if quota.reset_at and "description" in bucket:
                bucket["description"] = _relative_description(quota.seconds_to_reset or 0)
    _google_exhaustion(body, quota)


def _kiro(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for entry in _dicts(body.get("usageBreakdownList")):
        if entry.get("resourceType") != "CREDIT":
            continue
        limit = _number(entry.get("usageLimitWithPrecision")) or _number(entry.get("usageLimit")) or 0.0
        overages = _number(entry.get("currentOveragesWithPrecision")) or 0.0
        used = round(_share(limit, quota.used_pct) + overages, 2)
        entry["currentUsageWithPrecision"] = used
        if "currentUsage" in entry:
            entry["currentUsage"] = round(used)
        if quota.reset_at and "nextDateReset" in entry:
            entry["nextDateReset"] = float(_epoch_s(quota.reset_at))
    if quota.reset_at:
        if "nextDateReset" in body:
            body["nextDateReset"] = float(_epoch_s(quota.reset_at))
        if "daysUntilReset" in body:
            body["daysUntilReset"] = math.ceil((quota.seconds_to_reset or 0) / 86400)


def _cursor(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    used_pct = float(round(quota.used_pct, 1))
    for plan in filter(None, (_path(body, "individualUsage", "plan"), _path(body, "planUsage"))):
        limit = _number(plan.get("limit")) or 0.0
        used = round(_share(limit, quota.used_pct))
        for key in ("used", "totalSpend"):
            if key in plan:
                plan[key] = used
        if "remaining" in plan:
            plan["remaining"] = round(limit) - used
        breakdown = _dict(plan.get("breakdown"))
        if breakdown is not None:
            breakdown["included"] = used
            breakdown["total"] = used + round(_number(breakdown.get("bonus")) or 0)
        for key in ("autoPercentUsed", "apiPercentUsed", "totalPercentUsed"):
            if key in plan:
                plan[key] = used_pct
    for key in ("autoModelSelectedDisplayMessage", "namedModelSelectedDisplayMessage"):
        if isinstance(body.get(key), str):
            body[key] = re.sub(r"\d+(\.\d+)?%", f"{round(quota.used_pct)}%", body[key])
    if quota.reset_at and "billingCycleEnd" in body:
        end = body["billingCycleEnd"]
        is_millis = isinstance(end, str) and end.isdigit()
        body["billingCycleEnd"] = str(_epoch_ms(quota.reset_at)) if is_millis else _iso(end, quota.reset_at)


def _zai_glm(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for limit in _dicts((_path(body, "data") or {}).get("limits")):
        if limit.get("type") not in ("TOKENS_LIMIT", "CREDIT_LIMIT"):
            continue
        limit["percentage"] = _like(limit.get("percentage", 0), quota.used_pct)
        total = _number(limit.get("usage"))
        if total is not None and "currentValue" in limit:
            limit["currentValue"] = round(_share(total, quota.used_pct))
            if "remaining" in limit:
                limit["remaining"] = round(total) - limit["currentValue"]
        if quota.reset_at and "nextResetTime" in limit:
            limit["nextResetTime"] = _epoch_ms(quota.reset_at)
    error = _path(body, "error")
    if error is not None and quota.reset_at and isinstance(error.get("message"), str):
        local = quota.reset_at.astimezone(_ZAI_TEXT_ZONE).strftime("%Y-%m-%d %H:%M:%S")
        error["message"] = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", local, error["message"])


def _kimi_window(window: dict[str, Any] | None, quota: Quota) -> None:
    if window is None:
        return
    limit = _number(window.get("limit"))
    if limit is not None:
        used = round(_share(limit, quota.used_pct))
        if "used" in window:
            window["used"] = _like(window["used"], used)
        if "remaining" in window:
            window["remaining"] = _like(window["remaining"], round(limit) - used)
    if quota.reset_at and "resetTime" in window:
        window["resetTime"] = _iso(window["resetTime"], quota.reset_at)


def _kimi_coding(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    _kimi_window(_path(body, "usage"), quota)
    for limit in _dicts(body.get("limits")):
        _kimi_window(_path(limit, "detail"), quota)


def _minimax_coding(served: Served, quota: Quota) -> None:
    body = _dict(served.body) or {}
    for model in _dicts((_path(body, "data") or {}).get("model_remains")):
        for prefix, end_key, remains_key in (
            ("current_interval_", "end_time", "remains_time"),
            ("current_weekly_", "weekly_end_time", "weekly_remains_time"),
        ):
            total = _number(model.get(f"{prefix}total_count"))
            if total is not None and f"{prefix}usage_count" in model:
                # MiniMax names the *remaining* count usage_count.
                model[f"{prefix}usage_count"] = round(_share(total, quota.remaining_pct))
            percent_key = f"{prefix}remaining_percent"
            if percent_key in model:
                model[percent_key] = _like(model[percent_key], quota.remaining_pct)
            if quota.reset_at:
                if end_key in model:
                    model[end_key] = _epoch_ms(quota.reset_at)
                if remains_key in model:
                    model[remains_key] = round((quota.seconds_to_reset or 0) * 1000)
    error = _path(body, "error")
    if error is not None and quota.reset_at and isinstance(error.get("message"), str):
        error["message"] = re.sub(
            r"resets at (\S+)",
            lambda m: "resets at " + _iso(m[1], quota.reset_at or quota.now),
            error["message"],
        )


def _openrouter(served: Served, quota: Quota) -> None:
    data = _path(served.body, "data") or {}
    limit = _number(data.get("limit"))
    if limit is not None and "limit_remaining" in data:
        data["limit_remaining"] = round(_share(limit, quota.remaining_pct), 2)
    free = _dict(data.get("free_model_daily_requests"))
    free_limit = _number((free or {}).get("limit"))
    if free is not None and free_limit is not None:
        free["remaining"] = round(_share(free_limit, quota.remaining_pct))
        free["used"] = round(free_limit) - free["remaining"]


def _groq_like(pairs: list[tuple[str, str]], reset_keys: list[str]) -> RewriteFn:
    def rewrite(served: Served, quota: Quota) -> None:
        _remaining_headers(served.headers, pairs, quota.remaining_pct)
        wait = quota.seconds_to_reset
        if wait is not None:
            _reset_headers(served.headers, reset_keys, lambda _: go_duration(wait))

    return rewrite


def _cerebras(served: Served, quota: Quota) -> None:
    prefix = "x-ratelimit-"
    names = ("requests-day", "tokens-minute")
    pairs = [(f"{prefix}limit-{name}", f"{prefix}remaining-{name}") for name in names]
    _remaining_headers(served.headers, pairs, quota.remaining_pct)
    wait = quota.seconds_to_reset
    if wait is not None:
        keys = [f"{prefix}reset-requests-day", f"{prefix}reset-tokens-minute"]
        _reset_headers(served.headers, keys, lambda _: f"{wait:.1f}")


def _mistral(served: Served, quota: Quota) -> None:
    pairs = [
        ("x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute"),
        ("x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute"),
        ("x-ratelimitbysize-limit-month", "x-ratelimitbysize-remaining-month"),
    ]
    _remaining_headers(served.headers, pairs, quota.remaining_pct)
    wait = quota.seconds_to_reset
    if wait is not None:
        _reset_headers(served.headers, ["ratelimitbysize-reset"], lambda _: str(math.ceil(wait)))


def _anthropic_api(served: Served, quota: Quota) -> None:
    names = ("requests", "input-tokens", "output-tokens", "tokens")
    prefix = "anthropic-ratelimit-"
    pairs = [(f"{prefix}{name}-limit", f"{prefix}{name}-remaining") for name in names]
    _remaining_headers(served.headers, pairs, quota.remaining_pct)
    reset_at = quota.reset_at
    if reset_at is not None:
        keys = [f"{prefix}{name}-reset" for name in names]
        _reset_headers(served.headers, keys, lambda old: _iso(old, reset_at))


_OPENAI_PAIRS = [(f"x-ratelimit-limit-{n}", f"x-ratelimit-remaining-{n}") for n in ("requests", "tokens")]
_OPENAI_RESETS = [f"x-ratelimit-reset-{n}" for n in ("requests", "tokens")]

REWRITERS: dict[str, KindRewriter] = {
    "claude-oauth": KindRewriter(_claude_oauth, frozenset({"usage", "profile"})),
    "codex-chatgpt": KindRewriter(_codex_chatgpt, frozenset({"usage"})),
    "copilot": KindRewriter(_copilot, frozenset({"user_quota", "seat_token_exchange"})),
    "gemini-cli": KindRewriter(_gemini_cli, frozenset({"loadCodeAssist", "retrieveUserQuota"})),
    "antigravity": KindRewriter(
        _antigravity,
        frozenset({"loadCodeAssist", "fetchAvailableModels", "retrieveUserQuotaSummary_app_local"}),
    ),
    "kiro": KindRewriter(_kiro, frozenset({"GetUsageLimits"})),
    "cursor": KindRewriter(
        _cursor, frozenset({"usage_summary", "auth_me", "current_period_usage_dashboard"})
    ),
    "zai-glm": KindRewriter(_zai_glm, frozenset({"quota_limit"})),
    "kimi-coding": KindRewriter(_kimi_coding, frozenset({"usages"})),
    "minimax-coding": KindRewriter(_minimax_coding, frozenset({"coding_plan_remains"})),
    "openrouter": KindRewriter(_openrouter, frozenset({"key", "credits"})),
    "groq": KindRewriter(_groq_like(_OPENAI_PAIRS, _OPENAI_RESETS), frozenset()),
    "cerebras": KindRewriter(_cerebras, frozenset()),
    "mistral": KindRewriter(_mistral, frozenset()),
    "anthropic-api": KindRewriter(_anthropic_api, frozenset({"admin_cost_report"})),
    "openai-api": KindRewriter(_groq_like(_OPENAI_PAIRS, _OPENAI_RESETS), frozenset({"admin_costs"})),
}
