"""The callback (ladder_client.litellm_callback) in a real LiteLLM Router: usage, quota headers and
upstream failures reported to a running ladder, and never a request failed for want of a report."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ladder import models as m
from ladder_client import LadderClient
from tests.ladder_client.conftest import PLAN, PLAN_MODEL, Ladder
from tests.ladder_client.fake_openai import FakeOpenAI
from tests.ladder_client.sockets import refused_url

litellm = pytest.importorskip("litellm")
from litellm.integrations.custom_logger import CustomLogger  # noqa: E402 - after the skip above

from ladder_client.litellm_callback import LadderCallback  # noqa: E402 - needs LiteLLM, an optional extra
from ladder_client.litellm_router import uninstall_callback  # noqa: E402
from tests.ladder_client.test_litellm_router import (  # noqa: E402
    MESSAGES,
    _litellm_callbacks_restored,  # noqa: F401 - the autouse fixture
    cheap_keys,
    deployment,
    plan_keys,
)


def test_the_callback_never_fails_a_request_when_the_ladder_is_down(
    fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    router = litellm.Router(model_list=[deployment(fake, "plain", "cheap", **cheap_keys())], num_retries=0)
    callback = LadderCallback(LadderClient(refused_url(), "olr_never-asked-token", retries=0))
    litellm.logging_callback_manager.add_litellm_callback(callback)

    async def call() -> Any:
        response = await router.acompletion(model="plain", messages=MESSAGES)
        await asyncio.sleep(0.5)  # the success hook runs after the answer; let its flush fail
        return response

    try:
        with caplog.at_level(logging.WARNING, logger="ladder_client.reporting"):
            response = asyncio.run(call())
    finally:
        uninstall_callback(callback)
    assert response.choices[0].message.content == "ok"
    # The usage batch waits for the next flush, and is given up at the end (counted, not raised).
    assert any("could not report 1 usage events" in record.getMessage() for record in caplog.records)
    assert callback.loops.current_reporter is not None
    assert callback.loops.current_reporter.dropped == 1


def test_it_reports_a_failure_handed_to_both_hooks_once(fake: FakeOpenAI, gateway: LadderClient) -> None:
    fake.exhaust_plan(reset_in_s=60)
    router = litellm.Router(model_list=[deployment(fake, "plain", "plan", **plan_keys())], num_retries=0)
    callback = LadderCallback(gateway)
    seen: list[BaseException] = []

    class Recorder(CustomLogger):
        async def async_log_failure_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            # LiteLLM's own payload, handed to both of the ladder callback's hooks.
            callback.log_failure_event(kwargs, response_obj, start_time, end_time)
            await callback.async_log_failure_event(kwargs, response_obj, start_time, end_time)
            seen.append(kwargs["exception"])

    litellm.logging_callback_manager.add_litellm_callback(Recorder())
    with pytest.raises(litellm.RateLimitError):
        asyncio.run(router.acompletion(model="plain", messages=MESSAGES))
    assert len(seen) == 1
    failures = list(m.FailureEvent.objects.values_list("connection_id", "status", "classification"))
    assert failures == [(PLAN, 429, "quota_exhausted")]


def test_it_reports_no_failure_without_an_http_answer(ladder: Ladder) -> None:
    unreachable = {
        "model_name": "plain",
        "litellm_params": {"model": "openai/plan-model", "api_base": refused_url() + "/v1", "api_key": "k"},
        "model_info": {"id": "down", **plan_keys()},
    }
    router = litellm.Router(model_list=[unreachable], num_retries=0)
    litellm.logging_callback_manager.add_litellm_callback(
        LadderCallback(LadderClient(ladder.url, ladder.token))
    )
    with pytest.raises(litellm.InternalServerError):  # LiteLLM's name for a refused connection
        asyncio.run(router.acompletion(model="plain", messages=MESSAGES))
    # A connection error says nothing about the plan's quota: the ladder is not told.
    assert not m.FailureEvent.objects.exists()


def test_it_drops_quota_headers_older_than_a_reported_failure(gateway: LadderClient) -> None:
    client = gateway
    callback = LadderCallback(client)
    now = datetime.now(UTC)
    reset_at = now + timedelta(minutes=5)
    spent_headers = {
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-utilization": "1.0",
        "anthropic-ratelimit-unified-5h-reset": reset_at.isoformat(),
    }
    request = httpx.Request("POST", "http://upstream.invalid/v1/chat/completions")
    exhausted = litellm.RateLimitError(
        message="5-hour usage limit reached",
        llm_provider="openai",
        model=PLAN_MODEL[1],
        response=httpx.Response(429, headers=spent_headers, json={"error": {}}, request=request),
    )
    plan = {"litellm_params": {"model_info": plan_keys()}}

    def success(call_id: str, used: float) -> dict[str, Any]:
        headers = {
            "anthropic-ratelimit-unified-5h-utilization": str(used),
            "anthropic-ratelimit-unified-5h-reset": reset_at.isoformat(),
            "content-type": "application/json",
        }
        return {**plan, "litellm_call_id": call_id, "response_headers": headers}

    # The ladder's latched copy keeps the age of the reading it copies (from 10 s ago), so headers
    # from 1 s ago, sent after the failure, would read there as newer and lift the latch.
    client.report_observation(
        PLAN, success("seed", 0.4)["response_headers"], observed_at=now - timedelta(seconds=10)
    )
    callback.report_failure({**plan, "exception": exhausted}, None, now)
    callback.report_success(success("earlier", 0.4), None, now - timedelta(seconds=1))  # arrives late
    after_late_headers = client.connection(PLAN).reading
    callback.report_success(success("later", 0.05), None, now + timedelta(seconds=1))
    after_new_headers = client.connection(PLAN).reading

    late, new = (
        reading.window("5h") if reading else None for reading in (after_late_headers, after_new_headers)
    )
    assert late is not None
    assert (late.remaining_pct, late.latched) == (0.0, True)
    assert new is not None
    assert (new.remaining_pct, new.latched) == (95.0, False)
    assert m.UsageEvent.objects.count() == 2  # the late success's usage still counts
