"""Each kind's rewriter, read back the way an adapter would read the response."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from devtools.fakeupstream.rewriters import REWRITERS
from devtools.fakeupstream.rewriting import go_duration
from tests.fakeupstream.conftest import FIXTURE_TIME

RESET_AT = FIXTURE_TIME + timedelta(hours=3, minutes=20, seconds=30)
REMAINING = 25.0
# remaining % (None: a reset-only header), reset (None: no reset field beside this remaining)
Reading = tuple[float | None, datetime | None]


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text))


def _epoch(value: float | str) -> datetime:
    return datetime.fromtimestamp(float(value), UTC)


def _go(text: str) -> timedelta:
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return timedelta(seconds=sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|h|m|s)", text)))


def _pair(headers: httpx.Headers, limit: str, remaining: str) -> float:
    return 100 * float(headers[remaining]) / float(headers[limit])


def _claude(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("GET", "/api/oauth/usage").json()
    windows = [body[key] for key in ("five_hour", "seven_day", "seven_day_sonnet")]
    readings: list[Reading] = [(100 - w["utilization"], _iso(w["resets_at"])) for w in windows]
    readings += [(100 - limit["percent"], _iso(limit["resets_at"])) for limit in body["limits"]]
    headers = get("POST", "/v1/messages").headers
    prefix = "anthropic-ratelimit-unified-"
    for window in ("5h", "7d"):
        used = float(headers[f"{prefix}{window}-utilization"])
        readings.append((100 * (1 - used), _epoch(headers[f"{prefix}{window}-reset"])))
    return readings


def _codex(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("GET", "/backend-api/wham/usage").json()
    limits = [body["rate_limit"]] + [extra["rate_limit"] for extra in body["additional_rate_limits"]]
    readings: list[Reading] = []
    for limit in limits:
        for key in ("primary_window", "secondary_window"):
            window = limit[key]
            readings.append((100 - window["used_percent"], _epoch(window["reset_at"])))
            readings.append(
                (
                    100 - window["used_percent"],
                    FIXTURE_TIME + timedelta(seconds=window["reset_after_seconds"]),
                )
            )
    headers = get("POST", "/backend-api/codex/responses").headers
    for window in ("primary", "secondary"):
        used = float(headers[f"x-codex-{window}-used-percent"])
        readings.append((100 - used, _epoch(headers[f"x-codex-{window}-reset-at"])))
    return readings


def _copilot(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("GET", "/copilot_internal/user").json()
    premium = body["quota_snapshots"]["premium_interactions"]
    reset = _iso(body["quota_reset_date_utc"])
    return [
        (premium["percent_remaining"], reset),
        (100 * premium["remaining"] / premium["entitlement"], reset),
        (100 * premium["quota_remaining"] / premium["entitlement"], None),
    ]


def _gemini_cli(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("POST", "/v1internal:retrieveUserQuota").json()
    return [(100 * b["remainingFraction"], _iso(b["resetTime"])) for b in body["buckets"]]


def _antigravity(get: Callable[..., httpx.Response]) -> list[Reading]:
    models = get("POST", "/v1internal:fetchAvailableModels").json()["models"]
    readings: list[Reading] = [
        (100 * m["quotaInfo"]["remainingFraction"], _iso(m["quotaInfo"]["resetTime"]))
        for m in models.values()
        if not m.get("isInternal")
    ]
    summary = get("POST", "/exa.language_server_pb.LanguageServerService/RetrieveUserQuotaSummary").json()
    for group in summary["response"]["groups"]:
        readings += [(100 * b["remaining"]["remainingFraction"], None) for b in group["buckets"]]
    return readings


def _kiro(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("POST", "/").json()
    credit = body["usageBreakdownList"][0]
    used = credit["currentUsageWithPrecision"] - credit["currentOveragesWithPrecision"]
    return [(100 * (1 - used / credit["usageLimitWithPrecision"]), _epoch(credit["nextDateReset"]))]


def _cursor(get: Callable[..., httpx.Response]) -> list[Reading]:
    summary = get("GET", "/api/usage-summary").json()
    plan = summary["individualUsage"]["plan"]
    dashboard = get("POST", "/api/dashboard/get-current-period-usage").json()
    return [
        (100 - plan["totalPercentUsed"], _iso(summary["billingCycleEnd"])),
        (100 * (1 - plan["used"] / plan["limit"]), None),
        (100 * plan["remaining"] / plan["limit"], None),
        (100 - dashboard["planUsage"]["totalPercentUsed"], _epoch(int(dashboard["billingCycleEnd"]) / 1000)),
    ]


def _zai(get: Callable[..., httpx.Response]) -> list[Reading]:
    limits = get("GET", "/api/monitor/usage/quota/limit").json()["data"]["limits"]
    return [
        (100 - limit["percentage"], _epoch(limit["nextResetTime"] / 1000))
        for limit in limits
        if limit["type"] == "TOKENS_LIMIT"
    ]


def _kimi(get: Callable[..., httpx.Response]) -> list[Reading]:
    body = get("GET", "/coding/v1/usages").json()
    windows = [body["usage"]] + [limit["detail"] for limit in body["limits"]]
    return [(100 * int(w["remaining"]) / int(w["limit"]), _iso(w["resetTime"])) for w in windows] + [
        (100 * (1 - int(w["used"]) / int(w["limit"])), None) for w in windows
    ]


def _minimax(get: Callable[..., httpx.Response]) -> list[Reading]:
    model = get("GET", "/v1/api/openplatform/coding_plan/remains").json()["data"]["model_remains"][0]
    readings: list[Reading] = []
    for prefix, end, remains in (
        ("current_interval_", "end_time", "remains_time"),
        ("current_weekly_", "weekly_end_time", "weekly_remains_time"),
    ):
        readings.append((model[f"{prefix}remaining_percent"], _epoch(model[end] / 1000)))
        count_pct = 100 * model[f"{prefix}usage_count"] / model[f"{prefix}total_count"]
        readings.append((count_pct, FIXTURE_TIME + timedelta(milliseconds=model[remains])))
    return readings


def _openrouter(get: Callable[..., httpx.Response]) -> list[Reading]:
    data = get("GET", "/api/v1/key").json()["data"]
    free = data["free_model_daily_requests"]
    return [
        (100 * data["limit_remaining"] / data["limit"], None),
        (100 * free["remaining"] / free["limit"], None),
    ]


def _headers_reader(
    path: str, pairs: list[tuple[str, str]], resets: list[str], parse: Callable[[str], datetime]
) -> Callable[[Callable[..., httpx.Response]], list[Reading]]:
    def read(get: Callable[..., httpx.Response]) -> list[Reading]:
        headers = get("POST", path).headers
        readings: list[Reading] = [(_pair(headers, limit, remaining), None) for limit, remaining in pairs]
        readings += [(None, parse(headers[reset])) for reset in resets]
        return readings

    return read


def _after_go(text: str) -> datetime:
    return FIXTURE_TIME + _go(text)


def _after_seconds(text: str) -> datetime:
    return FIXTURE_TIME + timedelta(seconds=float(text))


_OPENAI_PAIRS = [
    ("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests"),
    ("x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens"),
]
_OPENAI_RESETS = ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
_ANTHROPIC = ["requests", "input-tokens", "output-tokens", "tokens"]

READERS: dict[str, Callable[[Callable[..., httpx.Response]], list[Reading]]] = {
    "claude-oauth": _claude,
    "codex-chatgpt": _codex,
    "copilot": _copilot,
    "gemini-cli": _gemini_cli,
    "antigravity": _antigravity,
    "kiro": _kiro,
    "cursor": _cursor,
    "zai-glm": _zai,
    "kimi-coding": _kimi,
    "minimax-coding": _minimax,
    "openrouter": _openrouter,
    "groq": _headers_reader("/openai/v1/chat/completions", _OPENAI_PAIRS, _OPENAI_RESETS, _after_go),
    "openai-api": _headers_reader("/v1/chat/completions", _OPENAI_PAIRS, _OPENAI_RESETS, _after_go),
    "cerebras": _headers_reader(
        "/v1/chat/completions",
        [
            ("x-ratelimit-limit-requests-day", "x-ratelimit-remaining-requests-day"),
            ("x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute"),
        ],
        ["x-ratelimit-reset-requests-day", "x-ratelimit-reset-tokens-minute"],
        _after_seconds,
    ),
    "mistral": _headers_reader(
        "/v1/chat/completions",
        [
            ("x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute"),
            ("x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute"),
            ("x-ratelimitbysize-limit-month", "x-ratelimitbysize-remaining-month"),
        ],
        ["ratelimitbysize-reset"],
        _after_seconds,
    ),
    "anthropic-api": _headers_reader(
        "/v1/messages",
        [(f"anthropic-ratelimit-{n}-limit", f"anthropic-ratelimit-{n}-remaining") for n in _ANTHROPIC],
        [f"anthropic-ratelimit-{n}-reset" for n in _ANTHROPIC],
        _iso,
    ),
}


def test_it_has_a_reader_for_every_rewriter() -> None:
    assert sorted(READERS) == sorted(REWRITERS)


def _getter(upstream: FakeUpstream, kind: str) -> Callable[..., httpx.Response]:
    def get(method: str, path: str) -> httpx.Response:
        response = httpx.request(method, upstream.url_for(kind) + path)
        assert response.status_code == 200, (kind, path, response.text)
        return response

    return get


@pytest.mark.parametrize("kind", sorted(READERS))
def test_it_shows_the_pinned_remaining_percent_and_reset(
    upstream: FakeUpstream, control: FakeUpstreamControl, kind: str
) -> None:
    control.set_remaining(kind, REMAINING, reset_at=RESET_AT)
    readings = READERS[kind](_getter(upstream, kind))
    assert readings
    for remaining, reset in readings:
        if remaining is not None:
            assert remaining == pytest.approx(REMAINING, abs=0.5), kind
        if reset is not None:
            assert abs(reset - RESET_AT) <= timedelta(seconds=1), kind


@pytest.mark.parametrize("kind", sorted(READERS))
def test_it_shows_a_spent_plan_as_zero(
    upstream: FakeUpstream, control: FakeUpstreamControl, kind: str
) -> None:
    control.set_remaining(kind, 0, reset_at=RESET_AT)
    remainings = [
        remaining for remaining, _ in READERS[kind](_getter(upstream, kind)) if remaining is not None
    ]
    assert remainings == pytest.approx([0.0] * len(remainings), abs=0.01)


@pytest.mark.parametrize("kind", sorted(READERS))
def test_it_shows_a_full_plan_as_one_hundred(
    upstream: FakeUpstream, control: FakeUpstreamControl, kind: str
) -> None:
    control.set_remaining(kind, 100, reset_at=RESET_AT)
    remainings = [
        remaining for remaining, _ in READERS[kind](_getter(upstream, kind)) if remaining is not None
    ]
    assert remainings == pytest.approx([100.0] * len(remainings), abs=0.01)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.644, "644ms"),
        (1.8, "1.8s"),
        (86.4, "1m26.4s"),
        (360, "6m0s"),
        (3600, "1h0m0s"),
        (12030, "3h20m30s"),
    ],
)
def test_it_writes_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


@pytest.mark.parametrize(
    ("kind", "case", "path", "check"),
    [
        ("codex-chatgpt", "usage_limit_reached", "/backend-api/codex/responses", "error.resets_at"),
        ("gemini-cli", "quota_exhausted_terminal", "/v1internal:generateContent", "quotaResetTimeStamp"),
        ("zai-glm", "five_hour_exhausted", "/api/coding/paas/v4/chat/completions", "message"),
        ("minimax-coding", "five_hour_exhausted", "/v1/text/chatcompletion_v2", "message"),
    ],
)
def test_it_points_the_exhaustion_error_at_the_reset(
    upstream: FakeUpstream, control: FakeUpstreamControl, kind: str, case: str, path: str, check: str
) -> None:
    control.set_remaining(kind, 0, reset_at=RESET_AT, exhausted_error=case)
    response = httpx.post(upstream.url_for(kind) + path)
    body: Any = response.json()
    assert response.status_code == 429
    if check == "error.resets_at":
        assert _epoch(body["error"]["resets_at"]) == RESET_AT
        assert body["error"]["resets_in_seconds"] == 12030
    elif check == "quotaResetTimeStamp":
        metadata = body["error"]["details"][0]["metadata"]
        assert _iso(metadata["quotaResetTimeStamp"]) == RESET_AT
        assert metadata["quotaResetDelay"] == "3h20m30s"
        assert body["error"]["details"][1]["retryDelay"] == "12030s"
    elif kind == "zai-glm":
        assert body["error"]["message"].endswith("reset at 2026-09-01 23:20:30")  # UTC+8
    else:
        assert "resets at 2026-09-01T15:20:30Z" in body["error"]["message"]
