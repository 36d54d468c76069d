from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl, FakeUpstreamControlError
from tests.fakeupstream.conftest import FIXTURE_TIME

USAGE = "/api/oauth/usage"
MESSAGES = "/v1/messages"


@pytest.fixture
def claude(upstream: FakeUpstream) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=upstream.url_for("claude-oauth")) as client:
        yield client


def _five_hour(client: httpx.Client) -> tuple[float, datetime]:
    window = client.get(USAGE).json()["five_hour"]
    return 100 - window["utilization"], datetime.fromisoformat(window["resets_at"])


def test_it_drains_linearly_then_holds_at_zero_then_resets(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.drain("claude-oauth", drain_s=100, reset_after_s=50, start_pct=80)
    cycle_end = FIXTURE_TIME + timedelta(seconds=150)
    seen = []
    for advance_s in (0, 25, 50, 25, 49, 1, 50):
        control.advance(advance_s)
        seen.append(_five_hour(claude))
    assert seen == [
        (80.0, cycle_end),  # t=0
        (60.0, cycle_end),  # t=25
        (20.0, cycle_end),  # t=75
        (0.0, cycle_end),  # t=100: spent, waits for the reset
        (0.0, cycle_end),  # t=149
        (100.0, cycle_end + timedelta(seconds=150)),  # t=150: reset, next cycle starts from 100
        (50.0, cycle_end + timedelta(seconds=150)),  # t=200
    ]


def test_it_drains_the_passive_headers_too(control: FakeUpstreamControl, claude: httpx.Client) -> None:
    control.drain("claude-oauth", drain_s=100, reset_after_s=0)
    control.advance(30)
    headers = claude.post(MESSAGES).headers
    reset = str(int((FIXTURE_TIME + timedelta(seconds=100)).timestamp()))
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.30"
    assert headers["anthropic-ratelimit-unified-7d-utilization"] == "0.30"
    assert headers["anthropic-ratelimit-unified-5h-reset"] == reset
    assert headers["anthropic-ratelimit-unified-reset"] == reset
    assert headers["anthropic-ratelimit-unified-status"] == "allowed"


def test_it_crosses_the_two_percent_cutoff(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.drain("codex-chatgpt", drain_s=100)
    with httpx.Client(base_url=upstream.url_for("codex-chatgpt")) as codex:
        control.advance(97)
        above = codex.get("/backend-api/wham/usage").json()["rate_limit"]
        control.advance(2)
        below = codex.get("/backend-api/wham/usage").json()["rate_limit"]
    assert 100 - above["primary_window"]["used_percent"] == 3
    assert 100 - below["primary_window"]["used_percent"] == 1
    assert below["primary_window"]["reset_after_seconds"] == 1
    assert above["allowed"] is True


def test_it_answers_inference_with_the_exhaustion_error_while_spent(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.drain(
        "claude-oauth", drain_s=60, reset_after_s=3600, exhausted_error="plan_window_exhausted_no_overage"
    )
    before = claude.post(MESSAGES)
    control.advance(60 + 600)
    spent = claude.post(MESSAGES)
    poll = claude.get(USAGE)
    control.advance(3000)
    after_reset = claude.post(MESSAGES)
    assert before.status_code == 200
    assert spent.status_code == 429
    assert spent.json()["error"]["type"] == "rate_limit_error"
    assert spent.headers["anthropic-ratelimit-unified-5h-status"] == "rejected"
    assert spent.headers["retry-after"] == "3000"
    assert spent.headers["anthropic-ratelimit-unified-5h-reset"] == str(int(FIXTURE_TIME.timestamp()) + 3660)
    assert poll.status_code == 200
    assert poll.json()["five_hour"]["utilization"] == 100.0
    assert after_reset.status_code == 200


def test_it_pins_the_remaining_percent_and_reset(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    reset_at = FIXTURE_TIME + timedelta(hours=3)
    control.set_remaining("zai-glm", 30, reset_at=reset_at)
    with httpx.Client(base_url=upstream.url_for("zai-glm")) as zai:
        limits = zai.get("/api/monitor/usage/quota/limit").json()["data"]["limits"]
    tokens = [limit for limit in limits if limit["type"] == "TOKENS_LIMIT"]
    assert [limit["percentage"] for limit in tokens] == [70, 70]
    assert {limit["nextResetTime"] for limit in tokens} == {int(reset_at.timestamp() * 1000)}
    time_limit = next(limit for limit in limits if limit["type"] == "TIME_LIMIT")
    assert time_limit["percentage"] == 22  # the search/MCP quota is not the plan


def test_it_keeps_the_fixture_resets_when_set_gives_none(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.set_remaining("claude-oauth", 10)
    assert _five_hour(claude) == (10.0, datetime.fromisoformat("2026-09-01T14:00:00.412805+00:00"))


def test_it_refuses_to_drain_a_kind_without_a_window(control: FakeUpstreamControl) -> None:
    with pytest.raises(FakeUpstreamControlError) as raised:
        control.drain("moonshot-api", drain_s=10)
    assert raised.value.status == 400
    assert "balance" in raised.value.message


def test_it_refuses_a_parameter_the_scenario_does_not_take(control: FakeUpstreamControl) -> None:
    with pytest.raises(FakeUpstreamControlError) as raised:
        control.error("claude-oauth", "token_expired", time=2)
    assert raised.value.status == 400
    assert raised.value.message == "unknown parameter 'time' of error; accepted: case, times, call"


def test_it_refuses_an_unknown_scenario(control: FakeUpstreamControl) -> None:
    with pytest.raises(FakeUpstreamControlError) as raised:
        control.scenario("claude-oauth", "flaky")
    assert raised.value.status == 400
    assert "scenarios: static drain set" in raised.value.message


def test_it_serves_an_error_for_n_requests_then_the_fixture_again(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.error("claude-oauth", "usage_endpoint_throttled", times=2)
    statuses = [claude.get(USAGE).status_code for _ in range(4)]
    assert statuses == [429, 429, 200, 200]


def test_it_serves_an_error_until_cleared(control: FakeUpstreamControl, claude: httpx.Client) -> None:
    control.error("claude-oauth", "token_expired")
    failing = [claude.get(USAGE) for _ in range(5)]
    control.static("claude-oauth")
    assert {r.status_code for r in failing} == {401}
    assert failing[0].json()["error"]["type"] == "authentication_error"
    assert claude.get(USAGE).status_code == 200


def test_it_serves_the_error_cases_shifted_to_now() -> None:
    with FakeUpstream(freeze_at=FIXTURE_TIME + timedelta(days=2)) as running, running.control() as ctl:
        ctl.error("zai-glm", "five_hour_exhausted", times=1)
        response = httpx.get(running.url_for("zai-glm") + "/api/coding/paas/v4/chat/completions")
    assert response.status_code == 429
    assert response.json()["error"]["message"].endswith("reset at 2026-09-03 22:00:00")


def test_it_serves_a_generic_500_for_any_kind(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.error("qwen-oauth", "http_500", times=1)
    url = upstream.url_for("qwen-oauth") + "/v1/chat/completions"
    first, second = httpx.post(url), httpx.post(url)
    assert first.status_code == 500
    assert first.json()["error"]["type"] == "fake_upstream_error"
    assert second.status_code == 404  # qwen has no fixture call


def test_it_limits_an_error_to_one_call(control: FakeUpstreamControl, claude: httpx.Client) -> None:
    control.error("claude-oauth", "transient_burst_429", call="messages_passive_headers")
    assert claude.get(USAGE).status_code == 200
    burst = claude.post(MESSAGES)
    assert burst.status_code == 429
    assert burst.headers["retry-after"] == "15"


def test_it_keeps_connection_namespaces_apart(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.set_remaining("claude-oauth", 50)
    control.set_remaining("claude-oauth", 5, connection="c1")
    control.error("claude-oauth", "token_expired", connection="c2")

    def usage(connection: str | None) -> httpx.Response:
        return httpx.get(upstream.url_for("claude-oauth", connection) + USAGE)

    assert usage("c1").json()["five_hour"]["utilization"] == 95.0
    assert usage("c3").json()["five_hour"]["utilization"] == 50.0  # inherits the kind's scenario
    assert usage(None).json()["five_hour"]["utilization"] == 50.0
    assert usage("c2").status_code == 401
    assert control.count("claude-oauth", connection="c1") == 1
    assert control.count("claude-oauth", connection=None) == 1
    assert control.count("claude-oauth") == 4


def test_it_slows_the_replies_of_one_kind(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.slow(300, kind="claude-oauth")
    started = time.monotonic()
    httpx.get(upstream.url_for("claude-oauth") + USAGE)
    slow_s = time.monotonic() - started
    started = time.monotonic()
    httpx.get(upstream.url_for("kimi-coding") + "/coding/v1/usages")
    fast_s = time.monotonic() - started
    assert slow_s >= 0.3
    assert fast_s < 0.3


def test_it_slows_every_reply_with_a_global_delay() -> None:
    with FakeUpstream(freeze_at=FIXTURE_TIME, delay_ms=250) as running:
        started = time.monotonic()
        response = httpx.get(running.url_for("kimi-coding") + "/coding/v1/usages")
        elapsed_s = time.monotonic() - started
        with running.control() as ctl:
            ctl.slow(0)
            started = time.monotonic()
            httpx.get(running.url_for("kimi-coding") + "/coding/v1/usages")
            undelayed_s = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed_s >= 0.25
    assert undelayed_s < 0.25


def test_it_serves_malformed_json_then_recovers(control: FakeUpstreamControl, claude: httpx.Client) -> None:
    control.fault("claude-oauth", "malformed", times=1)
    broken = claude.get(USAGE)
    assert broken.status_code == 200
    assert broken.headers["content-type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken.content)
    assert claude.get(USAGE).json()["five_hour"]["utilization"] == 37.0


@pytest.mark.parametrize("chunked", [False, True])
def test_it_streams_an_oversized_body(
    control: FakeUpstreamControl, claude: httpx.Client, chunked: bool
) -> None:
    control.fault("claude-oauth", "oversized", size_mb=3, chunked=chunked, times=1)
    response = claude.get(USAGE)
    assert len(response.content) == 3 * 1024 * 1024
    assert set(response.json()) == {"padding"}
    assert ("content-length" in response.headers) is not chunked
    assert claude.get(USAGE).status_code == 200


def test_it_survives_a_client_that_stops_reading_an_oversized_body(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    control.fault("claude-oauth", "oversized", size_mb=64)
    read = 0
    with httpx.Client(base_url=upstream.url_for("claude-oauth")) as client:
        with client.stream("GET", USAGE) as response:
            for chunk in response.iter_bytes():
                read += len(chunk)
                if read > 256 * 1024:
                    break
        control.static("claude-oauth")
        assert client.get(USAGE).status_code == 200
    assert read < 64 * 1024 * 1024


def test_it_closes_the_connection_without_a_response(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.fault("claude-oauth", "reset_connection", times=1)
    with pytest.raises(httpx.RemoteProtocolError):
        claude.get(USAGE)
    assert claude.get(USAGE).status_code == 200


def test_it_applies_a_global_fault_to_every_kind(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    control.fault(None, "reset_connection", times=2)
    for kind, path in (("kimi-coding", "/coding/v1/usages"), ("cursor", "/api/usage-summary")):
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(upstream.url_for(kind) + path)
    assert httpx.get(upstream.url_for("cursor") + "/api/usage-summary").status_code == 200


def test_it_serves_a_variant_shape(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.variant("zai-glm", "credit_based_plan_2026")
    body = httpx.get(upstream.url_for("zai-glm") + "/api/monitor/usage/quota/limit").json()
    assert body["data"]["level"] == "lite"
    assert {limit["type"] for limit in body["data"]["limits"]} == {"CREDIT_LIMIT"}


def test_it_counts_requests_per_kind_connection_and_call(
    upstream: FakeUpstream, control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    claude.get(USAGE)
    claude.get(USAGE)
    claude.post(MESSAGES)
    claude.get("/unknown")
    httpx.get(upstream.url_for("claude-oauth", "c9") + USAGE)
    state = control.state()
    assert state["totals"] == {"claude-oauth": 5}
    assert control.count("claude-oauth", connection=None, call="usage") == 2
    assert control.count("claude-oauth", call="messages_passive_headers") == 1
    assert control.count("claude-oauth", call=None) == 1
    assert control.count("claude-oauth", connection="c9") == 1
    assert control.count("kiro") == 0


def test_it_resets_scenarios_counts_delay_and_clock(
    control: FakeUpstreamControl, claude: httpx.Client
) -> None:
    control.error("claude-oauth", "token_expired")
    control.slow(50)
    control.advance(3600)
    claude.get(USAGE)
    control.reset()
    state = control.state()
    assert state["scenarios"] == []
    assert state["counts"] == []
    assert state["delay_ms"] == 0
    assert datetime.fromisoformat(state["now"]) == FIXTURE_TIME
    assert claude.get(USAGE).status_code == 200


def test_it_resets_one_kind_only(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    control.error("claude-oauth", "token_expired")
    control.error("kiro", "token_expired")
    control.reset("claude-oauth")
    assert httpx.get(upstream.url_for("claude-oauth") + USAGE).status_code == 200
    assert httpx.post(upstream.url_for("kiro") + "/").status_code == 403


def test_it_moves_and_unpins_its_clock(control: FakeUpstreamControl) -> None:
    control.freeze(FIXTURE_TIME + timedelta(days=1))
    control.advance(90)
    assert control.now() == FIXTURE_TIME + timedelta(days=1, seconds=90)
    control.real_clock()
    assert abs(control.now() - datetime.now(FIXTURE_TIME.tzinfo)) < timedelta(seconds=5)


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": "claude-oauth", "scenario": "nope"},
        {"kind": "nope", "scenario": "static"},
        {"kind": "claude-oauth", "scenario": "error", "case": "nope"},
        {"kind": "claude-oauth", "scenario": "error", "case": "token_expired", "times": 0},
        {"kind": "claude-oauth", "scenario": "error", "case": "token_expired", "call": "nope"},
        {"kind": "claude-oauth", "scenario": "drain"},
        {"kind": "claude-oauth", "scenario": "drain", "drain_s": 0},
        {"kind": "claude-oauth", "scenario": "set", "remaining_pct": 101},
        {"kind": "claude-oauth", "scenario": "set", "remaining_pct": 5, "reset_at": "2026-09-01T12:00:00"},
        {"kind": "claude-oauth", "scenario": "variant", "variant": "nope"},
        {"kind": None, "scenario": "error", "case": "http_500"},
        {"kind": None, "connection": "c1", "scenario": "slow", "delay_ms": 5},
        {"kind": None, "scenario": "slow", "delay_ms": -1},
    ],
)
def test_it_rejects_a_bad_scenario(upstream: FakeUpstream, payload: dict[str, object]) -> None:
    response = httpx.post(upstream.url + "/_control/scenario", json=payload)
    assert response.status_code in (400, 404)
    assert response.json()["error"]


def test_it_rejects_a_control_body_that_is_not_json(upstream: FakeUpstream) -> None:
    response = httpx.post(upstream.url + "/_control/scenario", content=b"{nope")
    assert response.status_code == 400


def test_it_describes_the_active_scenarios(control: FakeUpstreamControl) -> None:
    control.drain("claude-oauth", drain_s=100, connection="c1")
    control.advance(10)
    (scenario,) = control.state()["scenarios"]
    assert scenario["kind"] == "claude-oauth"
    assert scenario["connection"] == "c1"
    assert scenario["quota"]["remaining_pct"] == 90.0
