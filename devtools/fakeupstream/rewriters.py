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

from devtools.fakeupstream import plan_rewriters as plans
from devtools.fakeupstream.rewriting import (
    KindRewriter,
    Quota,
    RewriteFn,
    Served,
    go_duration,
    iso_like,
    remaining_headers,
    reset_headers,
)

UNSUPPORTED = {
    "moonshot-api": "balance only: no quota window to rewrite",
    "qwen-oauth": "no quota endpoint in the fixture",
}


# --- the kinds whose quota only headers show (API keys) ---


def _groq_like(pairs: list[tuple[str, str]], reset_keys: list[str]) -> RewriteFn:
    def rewrite(served: Served, quota: Quota) -> None:
        remaining_headers(served.headers, pairs, quota.remaining_pct)
        wait = quota.seconds_to_reset
        if wait is not None:
            reset_headers(served.headers, reset_keys, lambda _: go_duration(wait))

    return rewrite


def _cerebras(served: Served, quota: Quota) -> None:
    prefix = "x-ratelimit-"
    names = ("requests-day", "tokens-minute")
    pairs = [(f"{prefix}limit-{name}", f"{prefix}remaining-{name}") for name in names]
    remaining_headers(served.headers, pairs, quota.remaining_pct)
    wait = quota.seconds_to_reset
    if wait is not None:
        keys = [f"{prefix}reset-requests-day", f"{prefix}reset-tokens-minute"]
        reset_headers(served.headers, keys, lambda _: f"{wait:.1f}")


def _mistral(served: Served, quota: Quota) -> None:
    pairs = [
        ("x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute"),
        ("x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute"),
        ("x-ratelimitbysize-limit-month", "x-ratelimitbysize-remaining-month"),
    ]
    remaining_headers(served.headers, pairs, quota.remaining_pct)
    wait = quota.seconds_to_reset
    if wait is not None:
        reset_headers(served.headers, ["ratelimitbysize-reset"], lambda _: str(math.ceil(wait)))


def _anthropic_api(served: Served, quota: Quota) -> None:
    names = ("requests", "input-tokens", "output-tokens", "tokens")
    prefix = "anthropic-ratelimit-"
    pairs = [(f"{prefix}{name}-limit", f"{prefix}{name}-remaining") for name in names]
    remaining_headers(served.headers, pairs, quota.remaining_pct)
    reset_at = quota.reset_at
    if reset_at is not None:
        keys = [f"{prefix}{name}-reset" for name in names]
        reset_headers(served.headers, keys, lambda old: iso_like(old, reset_at))


_OPENAI_PAIRS = [(f"x-ratelimit-limit-{n}", f"x-ratelimit-remaining-{n}") for n in ("requests", "tokens")]
_OPENAI_RESETS = [f"x-ratelimit-reset-{n}" for n in ("requests", "tokens")]

REWRITERS: dict[str, KindRewriter] = {
    "claude-oauth": KindRewriter(plans.claude_oauth, frozenset({"usage", "profile"})),
    "codex-chatgpt": KindRewriter(plans.codex_chatgpt, frozenset({"usage"})),
    "copilot": KindRewriter(plans.copilot, frozenset({"user_quota", "seat_token_exchange"})),
    "gemini-cli": KindRewriter(plans.gemini_cli, frozenset({"loadCodeAssist", "retrieveUserQuota"})),
    "antigravity": KindRewriter(
        plans.antigravity,
        frozenset({"loadCodeAssist", "fetchAvailableModels", "retrieveUserQuotaSummary_app_local"}),
    ),
    "kiro": KindRewriter(plans.kiro, frozenset({"GetUsageLimits"})),
    "cursor": KindRewriter(
        plans.cursor, frozenset({"usage_summary", "auth_me", "current_period_usage_dashboard"})
    ),
    "zai-glm": KindRewriter(plans.zai_glm, frozenset({"quota_limit"})),
    "kimi-coding": KindRewriter(plans.kimi_coding, frozenset({"usages"})),
    "minimax-coding": KindRewriter(plans.minimax_coding, frozenset({"coding_plan_remains"})),
    "openrouter": KindRewriter(plans.openrouter, frozenset({"key", "credits"})),
    "groq": KindRewriter(_groq_like(_OPENAI_PAIRS, _OPENAI_RESETS), frozenset()),
    "cerebras": KindRewriter(_cerebras, frozenset()),
    "mistral": KindRewriter(_mistral, frozenset()),
    "anthropic-api": KindRewriter(_anthropic_api, frozenset({"admin_cost_report"})),
    "openai-api": KindRewriter(_groq_like(_OPENAI_PAIRS, _OPENAI_RESETS), frozenset({"admin_costs"})),
}
