"""Every error case of every fixture, received over real HTTP and classified by its adapter."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from ladder.domain.types import FailureClass
from ladder.providers import ADAPTERS, FetchError
from tests.providers.conftest import (
    FIXTURES_DIR,
    NOW,
    FakeUpstream,
    connection_for,
    load_fixture,
    roundtrip_case,
)

AT_14 = datetime(2026, 9, 1, 14, 0, tzinfo=UTC)
TOMORROW = datetime(2026, 9, 2, 0, 0, tzinfo=UTC)

# (kind, case) → (classification, window, reset_at, retry_after_s)
Expected = tuple[FailureClass, str | None, datetime | None, float | None]
EXPECTED: dict[tuple[str, str], Expected] = {
    ("claude-oauth", "plan_window_exhausted_no_overage"): ("quota_exhausted", "5h", AT_14, 7200.0),
    ("claude-oauth", "plan_window_exhausted_overage_in_use"): ("quota_exhausted", "5h", AT_14, None),
    ("claude-oauth", "transient_burst_429"): ("rate_limited", None, None, 15.0),
    ("claude-oauth", "usage_endpoint_throttled"): ("rate_limited", None, None, 300.0),
    ("claude-oauth", "token_expired"): ("auth_failed", None, None, None),
    ("codex-chatgpt", "usage_limit_reached"): ("quota_exhausted", "5h", AT_14, 7200.0),
    ("codex-chatgpt", "transient_rate_limit"): ("rate_limited", None, None, 7.0),
    ("codex-chatgpt", "model_at_capacity"): ("upstream_error", None, None, None),
    ("copilot", "premium_quota_exhausted"): ("quota_exhausted", "monthly-premium", None, None),
    ("copilot", "transient_rate_limited"): ("rate_limited", None, None, 60.0),
    ("copilot", "legacy_snapshot_over_quota"): (
        "quota_exhausted",
        "monthly-premium",
        datetime(2026, 10, 1, tzinfo=UTC),
        None,
    ),
    ("copilot", "token_revoked"): ("auth_failed", None, None, None),
    ("antigravity", "quota_exhausted"): (
        "quota_exhausted",
        "claude-opus-4-6-thinking",
        datetime(2026, 9, 1, 13, 0, tzinfo=UTC),
        3600.0,
    ),
    ("antigravity", "short_rate_limit"): ("rate_limited", "claude-opus-4-6-thinking", None, 0.479417207),
    ("antigravity", "ai_credits_exhausted"): ("quota_exhausted", None, None, None),
    ("antigravity", "forbidden"): ("auth_failed", None, None, None),
    ("gemini-cli", "quota_exhausted_terminal"): (
        "quota_exhausted",
        "gemini-2.5-pro",
        datetime(2026, 9, 2, 2, 0, tzinfo=UTC),
        50400.0,
    ),
    ("gemini-cli", "rate_limit_retryable"): ("rate_limited", "gemini-2.5-pro", None, 4.2),
    ("gemini-cli", "daily_quota_failure_legacy"): ("quota_exhausted", None, None, None),
    ("kiro", "monthly_limit_reached"): ("quota_exhausted", "monthly-credits", None, None),
    ("kiro", "too_many_requests_ambiguous"): ("rate_limited", None, None, None),
    ("kiro", "token_expired"): ("auth_failed", None, None, None),
    ("cursor", "session_expired_redirect"): ("auth_failed", None, None, None),
    ("cursor", "unauthorized"): ("auth_failed", None, None, None),
    ("zai-glm", "five_hour_exhausted"): ("quota_exhausted", "5h", AT_14, None),
    ("zai-glm", "high_concurrency_transient"): ("rate_limited", None, None, None),
    ("zai-glm", "overloaded_transient"): ("rate_limited", None, None, None),
    ("zai-glm", "invalid_key_in_body"): ("auth_failed", None, None, None),
    ("kimi-coding", "weekly_exhausted"): ("quota_exhausted", "7d", None, None),
    ("kimi-coding", "cycle_exhausted_anthropic_shape"): ("quota_exhausted", None, None, None),
    ("kimi-coding", "transient_rate_limit"): ("rate_limited", None, None, None),
    ("minimax-coding", "five_hour_exhausted"): ("quota_exhausted", "5h", AT_14, None),
    ("minimax-coding", "rpm_rate_limit_in_body"): ("rate_limited", None, None, None),
    ("minimax-coding", "invalid_key_in_body"): ("auth_failed", None, None, None),
    ("openrouter", "free_models_per_day"): ("quota_exhausted", "daily-requests", TOMORROW, None),
    ("openrouter", "free_models_per_minute"): ("rate_limited", None, None, 20.0),
    ("openrouter", "upstream_provider_429"): ("rate_limited", None, None, None),
    ("openrouter", "insufficient_credits"): ("quota_exhausted", None, None, None),
    ("openrouter", "key_limit_reached"): ("quota_exhausted", "key-limit", None, None),
    ("groq", "tokens_per_day_exhausted"): (
        "quota_exhausted",
        "tokens-day",
        NOW + timedelta(seconds=578.016),
        578.016,
    ),
    ("groq", "tokens_per_minute_transient"): ("rate_limited", None, None, 1.984999999),
    ("cerebras", "requests_per_day_exhausted"): ("quota_exhausted", "requests-day", TOMORROW, 43200.0),
    ("cerebras", "tokens_per_minute_transient"): ("rate_limited", None, None, 11.38),
    ("mistral", "rate_limited"): ("rate_limited", None, None, None),
    ("mistral", "rate_limited_legacy_body"): ("rate_limited", None, None, None),
    ("anthropic-api", "rate_limited"): (
        "rate_limited",
        "input-tokens-minute",
        datetime(2026, 9, 1, 12, 0, 12, tzinfo=UTC),
        12.0,
    ),
    ("anthropic-api", "credit_balance_too_low"): ("quota_exhausted", None, None, None),
    ("anthropic-api", "overloaded"): ("upstream_error", None, None, None),
    ("openai-api", "rate_limit_exceeded"): ("rate_limited", None, None, 1.0),
    ("openai-api", "insufficient_quota"): ("quota_exhausted", None, None, None),
    ("qwen-oauth", "free_quota_exceeded"): ("quota_exhausted", None, None, None),
    ("qwen-oauth", "insufficient_quota"): ("quota_exhausted", None, None, None),
}

# The usage endpoint of each polling kind, where its non-2xx error cases are served to ``fetch``.
USAGE_ROUTES = {
    "claude-oauth": ("GET", "/api/oauth/usage"),
    "codex-chatgpt": ("GET", "/backend-api/wham/usage"),
    "copilot": ("GET", "/copilot_internal/user"),
    "kiro": ("POST", "/"),
    "cursor": ("GET", "/api/usage-summary"),
    "zai-glm": ("GET", "/api/monitor/usage/quota/limit"),
    "kimi-coding": ("GET", "/coding/v1/usages"),
    "minimax-coding": ("GET", "/v1/api/openplatform/coding_plan/remains"),
    "openrouter": ("GET", "/api/v1/key"),
    "moonshot-api": ("GET", "/v1/users/me/balance"),
}
# In-body errors of a 200 answer that fetch must raise, not read.
IN_BODY_ERRORS = {
    ("zai-glm", "invalid_key_in_body"),
    ("minimax-coding", "rpm_rate_limit_in_body"),
    ("minimax-coding", "invalid_key_in_body"),
}


def _fetch_cases() -> list[tuple[str, str]]:
    return [
        (kind, case)
        for kind, case in EXPECTED
        if kind in USAGE_ROUTES
        and (load_fixture(kind)["errors"][case]["status"] >= 300 or (kind, case) in IN_BODY_ERRORS)
    ]


def test_it_has_an_expectation_for_every_error_case_of_every_fixture() -> None:
    cases = {
        (path.stem, case)
        for path in FIXTURES_DIR.glob("*.json")
        for case in load_fixture(path.stem)["errors"]
    }
    assert cases == set(EXPECTED)


@pytest.mark.parametrize(("kind", "case"), sorted(EXPECTED))
def test_it_classifies_each_error_case_received_over_http(
    kind: str, case: str, upstream: FakeUpstream, client: httpx.Client
) -> None:
    response = roundtrip_case(upstream, client, load_fixture(kind)["errors"][case])

    failure = ADAPTERS[kind].classify_failure(response.status_code, response.headers, response.content, NOW)

    classification, window, reset_at, retry_after_s = EXPECTED[(kind, case)]
    assert (failure.classification, failure.window, failure.reset_at) == (classification, window, reset_at)
    assert failure.retry_after_s == (pytest.approx(retry_after_s) if retry_after_s is not None else None)
    assert failure.reset_at is None or failure.reset_at.tzinfo is not None


@pytest.mark.parametrize(("kind", "case"), _fetch_cases())
def test_it_raises_the_same_failure_when_the_usage_endpoint_answers_an_error_case(
    kind: str, case: str, upstream: FakeUpstream, client: httpx.Client
) -> None:
    fixture = load_fixture(kind)
    upstream.replay(fixture)
    method, path = USAGE_ROUTES[kind]
    upstream.serve_case(fixture, case, method=method, path=path)
    adapter = ADAPTERS[kind]

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, adapter.provider), client, NOW)

    assert raised.value.failure.classification == EXPECTED[(kind, case)][0]
    assert raised.value.failure.window == EXPECTED[(kind, case)][1]
    assert raised.value.status == fixture["errors"][case]["status"]
    assert raised.value.transient == (raised.value.failure.classification == "rate_limited")


def test_it_classifies_bodies_given_as_decoded_json_or_text_alike() -> None:
    case = load_fixture("codex-chatgpt")["errors"]["usage_limit_reached"]
    adapter = ADAPTERS["codex-chatgpt"]

    as_json = adapter.classify_failure(case["status"], case["headers"], case["body"], NOW)
    as_text = adapter.classify_failure(case["status"], case["headers"], json.dumps(case["body"]), NOW)

    assert as_json == as_text
    assert as_json.classification == "quota_exhausted"


def test_it_treats_an_unknown_429_asking_for_a_long_wait_as_exhaustion() -> None:
    openai = ADAPTERS["openai-api"].classify_failure(429, {"Retry-After": "3600"}, None, NOW)
    assert (openai.classification, openai.retry_after_s) == ("quota_exhausted", 3600.0)
    generic = ADAPTERS["cursor"].classify_failure(429, {"Retry-After": "3600"}, None, NOW)
    assert (generic.classification, generic.retry_after_s) == ("quota_exhausted", 3600.0)
    short = ADAPTERS["cursor"].classify_failure(429, {"retry-after": "30"}, None, NOW)
    assert (short.classification, short.retry_after_s) == ("rate_limited", 30.0)


def test_it_reads_retry_after_as_an_http_date() -> None:
    failure = ADAPTERS["cursor"].classify_failure(
        429, {"Retry-After": "Tue, 01 Sep 2026 12:01:00 GMT"}, None, NOW
    )
    assert failure.retry_after_s == 60.0


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_it_classifies_server_errors_as_upstream_errors(status: int) -> None:
    for adapter in ADAPTERS.values():
        assert (
            adapter.classify_failure(status, {}, "<html>oops</html>", NOW).classification == "upstream_error"
        )


def test_it_classifies_401_as_an_auth_failure_for_every_adapter() -> None:
    for adapter in ADAPTERS.values():
        assert adapter.classify_failure(401, {}, None, NOW).classification == "auth_failed", adapter.kind


def test_it_prefers_retry_after_ms_to_retry_after() -> None:
    headers = {"retry-after-ms": "644", "retry-after": "1"}
    failure = ADAPTERS["openai-api"].classify_failure(429, headers, None, NOW)

    assert failure.retry_after_s == pytest.approx(0.644)
