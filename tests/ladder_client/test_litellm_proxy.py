"""The LiteLLM proxy hook, its methods called as the proxy calls them, with a real LiteLLM Router
(the proxy's llm_router) against a running ladder and a local OpenAI-compatible fake: refusals
with their codes and headers, pass-through, the one-rung climb after a 429, batched usage, and
borrowed keys (the start-up check: test_litellm_proxy_config.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder import models as m
from ladder_client import UsageEvent
from ladder_client.aclient import AsyncLadderClient
from tests.ladder_client.conftest import CHEAP, PLAN, Ladder
from tests.ladder_client.fake_openai import PROMPT_TOKENS, FakeOpenAI
from tests.ladder_client.sockets import refused_url

litellm = pytest.importorskip("litellm")
from ladder_client.litellm_deployments import (  # noqa: E402
    BORROW_KEY,
    CONNECTION_KEY,
    MODEL_KEY,
    PROVIDER_KEY,
    LadderPoolEmpty,
    group_deployments,
)
from ladder_client.litellm_proxy import GROUPS_KEPT, LadderProxyHook  # noqa: E402 - needs LiteLLM, an optional extra
from ladder_client.litellm_proxy_routing import POOL_KEY, REQUEST_KEY  # noqa: E402
from tests.ladder_client.test_litellm_integration import (  # noqa: E402
    MESSAGES,
    SUBSCRIPTION,
    THRIFTY,
    model_list,
)
from tests.ladder_client.test_litellm_router import _litellm_callbacks_restored  # noqa: E402, F401


def proxy_router(fake: FakeOpenAI, **options: Any) -> Any:
    return litellm.Router(model_list=model_list(fake), num_retries=1, retry_after=0, **options)


def hook_for(ladder: Ladder, router: Any, **options: Any) -> LadderProxyHook:
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router, timeout_s=10, **options)
    litellm.logging_callback_manager.add_litellm_callback(hook)
    return hook


def request(model: str, **extra: Any) -> dict[str, Any]:
    """A chat request as the proxy hands it to the pre-call hook (its metadata already made)."""
    return {"model": model, "messages": MESSAGES, "metadata": {"user_api_key": "hashed"}, **extra}


async def serve(hook: LadderProxyHook, router: Any, data: dict[str, Any]) -> Any:
    """What the proxy does with a request: the pre-call hook, then the router."""
    data = await hook.async_pre_call_hook(None, None, data, "completion")
    return await router.acompletion(**data)


def status_of(exc: BaseException) -> tuple[int, dict[str, str], dict[str, Any]]:
    return exc.status_code, exc.headers, exc.detail  # type: ignore[attr-defined]


# --- before the router ----------------------------------------------------------------------


def test_it_passes_a_model_outside_the_ladder_untouched(ladder: Ladder, fake: FakeOpenAI) -> None:
    router = proxy_router(fake)
    hook = LadderProxyHook(url=refused_url(), token="olr_never-asked", router=router)
    data = request("paid", fallbacks=["gpt-4o"])
    before = {**data, "metadata": dict(data["metadata"])}
    assert asyncio.run(hook.async_pre_call_hook(None, None, data, "completion")) == before


def test_it_puts_the_pool_in_the_metadata_and_strips_client_fallbacks(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake)
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router)

    async def run() -> dict[str, Any]:
        try:
            data = request(THRIFTY, fallbacks=["paid"], context_window_fallbacks=[{THRIFTY: ["paid"]}])
            return await hook.async_pre_call_hook(None, None, data, "completion")
        finally:
            await hook.aclose()

    data = asyncio.run(run())
    assert "fallbacks" not in data
    assert "context_window_fallbacks" not in data
    assert data["disable_fallbacks"] is True
    assert data["metadata"][POOL_KEY] == [
        ["claude", "claude-sonnet-4-5", [PLAN]],
        ["openai", "gpt-4o-mini", [CHEAP]],
    ]
    assert data["metadata"][REQUEST_KEY]
    assert data["metadata"]["user_api_key"] == "hashed"


def test_an_empty_pool_is_refused_before_the_router_503_then_429_with_retry_after(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake, fallbacks=[])
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router)
    client = ladder.client()

    async def refused() -> BaseException:
        with pytest.raises(Exception, match="auto/") as raised:
            await hook.async_pre_call_hook(
                None, None, request(SUBSCRIPTION, fallbacks=["paid"]), "completion"
            )
        return raised.value

    # No verified reading of the plan yet: nothing the clock will fix, so 503 without Retry-After.
    status, headers, detail = status_of(asyncio.run(refused()))
    assert (status, headers) == (503, {})
    assert detail["code"] == "no_verified_subscription_quota"
    assert detail["retry_at"] is None

    # The plan read, then spent: a 429 whose reset the ladder gives as retry_at.
    client.report_observation(PLAN, fake.plan.headers())
    reset_at = fake.exhaust_plan(reset_in_s=3600)
    client.report_failure(
        PLAN, 429, headers=fake.plan.headers(), body={"error": "spent"}, model="claude-sonnet-4-5"
    )
    status, headers, detail = status_of(asyncio.run(refused()))
    assert status == 429
    retry_at = datetime.fromisoformat(detail["retry_at"])
    assert datetime.now(UTC) < retry_at <= reset_at  # the cooldown the 429 started, clamped to the reset
    assert 0 < int(headers["Retry-After"]) - (retry_at - datetime.now(UTC)).total_seconds() <= 2
    assert detail["code"] == "no_verified_subscription_quota"
    assert [reason["reason"] for reason in detail["reasons"]] == ["cooling_down"]
    assert fake.routes() == []  # nothing reached any upstream, paid or not


def test_it_answers_503_with_retry_after_when_the_ladder_cannot_be_asked(fake: FakeOpenAI) -> None:
    router = proxy_router(fake)
    client = AsyncLadderClient(refused_url(), "olr_never-asked", retries=0)
    hook = LadderProxyHook(router=router, client=client)
    with pytest.raises(Exception, match="auto/") as raised:
        asyncio.run(hook.async_pre_call_hook(None, None, request(THRIFTY), "completion"))
    status, headers, detail = status_of(raised.value)
    assert (status, headers["Retry-After"]) == (503, "5")
    assert (detail["code"], detail["ladder_code"]) == ("ladder_unavailable", "connection_failed")
    assert fake.routes() == []


def test_a_router_with_fallbacks_from_an_auto_group_refuses_every_auto_request(fake: FakeOpenAI) -> None:
    router = proxy_router(fake, fallbacks=[{SUBSCRIPTION: ["paid"]}])
    hook = LadderProxyHook(url=refused_url(), token="olr_never-asked", router=router)
    with pytest.raises(Exception, match="auto/") as raised:
        asyncio.run(hook.async_pre_call_hook(None, None, request(THRIFTY), "completion"))
    status, _, detail = status_of(raised.value)
    assert (status, detail["code"]) == (503, "config_error")
    assert "'auto/subscription' → ['paid']" in detail["message"]


# --- each attempt, and the outcomes -----------------------------------------------------------


def test_a_retry_after_a_429_climbs_exactly_one_rung_and_the_ladder_heard_it_first(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake)
    hook = hook_for(ladder, router, reporter_options={"flush_interval_s": 60})
    client = ladder.client()
    client.report_observation(PLAN, fake.plan.headers())

    async def run() -> Any:
        try:
            served = await serve(hook, router, request(THRIFTY))
            assert fake.routes() == ["plan"]
            fake.exhaust_plan(reset_in_s=120)
            climbed = await serve(hook, router, request(THRIFTY))
            assert fake.routes() == ["plan", "plan", "cheap"]
            # The failure hook was awaited: the ladder cools the plan down already.
            assert (await hook.client.connection(PLAN)).cooldown_until is not None
            assert hook.loops.reporter.failures_sent == 1
            return served, climbed
        finally:
            await hook.aclose()

    served, climbed = asyncio.run(run())
    assert served.usage.prompt_tokens == climbed.usage.prompt_tokens == PROMPT_TOKENS
    assert "paid" not in fake.routes()


def test_the_filter_drops_a_deployment_that_failed_in_this_request(ladder: Ladder, fake: FakeOpenAI) -> None:
    router = proxy_router(fake)
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router)
    client = ladder.client()
    deployments = group_deployments(router, THRIFTY)
    plan, cheap = deployments

    async def run() -> tuple[list[Any], list[Any]]:
        try:
            data = await hook.async_pre_call_hook(None, None, request(THRIFTY), "completion")
            first = await hook.async_filter_deployments(THRIFTY, deployments, MESSAGES, data)
            error = httpx.Response(
                429,
                headers=fake.plan.headers() | {"content-type": "application/json"},
                json={"error": {"message": "spent"}},
                request=httpx.Request("POST", fake.base("plan")),
            )
            exc = litellm.RateLimitError("spent", llm_provider="openai", model="plan", response=error)
            kwargs = {
                "exception": exc,
                "litellm_params": {"metadata": {**data["metadata"], "model_info": plan["model_info"]}},
            }
            await hook.async_log_failure_event(kwargs, None, datetime.now(UTC), datetime.now(UTC))
            # Awaited: the ladder has the 429 before the retry's filter runs.
            assert client.connection(PLAN).cooldown_until is not None
            second = await hook.async_filter_deployments(THRIFTY, deployments, MESSAGES, data)
            return first, second
        finally:
            await hook.aclose()

    first, second = asyncio.run(run())
    assert [d["model_info"]["id"] for d in first] == [plan["model_info"]["id"]]
    assert [d["model_info"]["id"] for d in second] == [cheap["model_info"]["id"]]


def twin(deployment: Mapping[str, Any], ident: str, **changes: str) -> dict[str, Any]:
    """``deployment`` under another id, its ladder keys changed as given."""
    return {**deployment, "model_info": {**deployment["model_info"], "id": ident, **changes}}


def filtered_ids(
    router: Any, deployments: list[Any], order: list[str], skipped_each: list[list[str]]
) -> list[Any]:
    """The ids the filter hands each attempt (LiteLLM's skipped deployments given), the pool's one
    entry allowing the connections of ``order`` as the pre-call hook leaves it: the ladder is not asked."""
    hook = LadderProxyHook(url=refused_url(), token="olr_never-asked", router=router)
    info = group_deployments(router, THRIFTY)[0]["model_info"]
    pool = [[info[PROVIDER_KEY], info[MODEL_KEY], order]]
    hook._pools["req-1"] = pool
    data = {"metadata": {POOL_KEY: pool, REQUEST_KEY: "req-1"}}

    async def run() -> list[list[Any]]:
        picks = []
        for skipped in skipped_each:
            attempt = {**data, "_retry_skipped_deployment_ids": skipped}
            picks.append(await hook.async_filter_deployments(THRIFTY, deployments, MESSAGES, attempt))
        return picks

    return [[d["model_info"]["id"] for d in pick] for pick in asyncio.run(run())]


def test_the_filter_hands_an_attempt_the_first_allowed_connection_only(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake)
    plan = group_deployments(router, THRIFTY)[0]
    twins = [twin(plan, f"plan-{name}", **{CONNECTION_KEY: name}) for name in ("plan-a", "plan-b", "plan-c")]
    # The ladder's order within the entry is b, c, a: the attempt gets b's deployment alone, and
    # the retry after b failed gets c's.
    picks = filtered_ids(router, twins, ["plan-b", "plan-c", "plan-a"], [[], ["plan-plan-b"]])
    assert picks == [["plan-plan-b"], ["plan-plan-c"]]


def test_the_filter_hands_every_deployment_of_that_connection_and_no_other_model(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake)
    plan = group_deployments(router, THRIFTY)[0]
    deployments = [
        twin(plan, "other-model", **{CONNECTION_KEY: "plan-a", MODEL_KEY: "another-model"}),
        twin(plan, "not-allowed", **{CONNECTION_KEY: "plan-z"}),
        twin(plan, "c-1", **{CONNECTION_KEY: "plan-c"}),
        twin(plan, "a-1", **{CONNECTION_KEY: "plan-a"}),
        {"model_name": THRIFTY, "litellm_params": plan["litellm_params"], "model_info": {"id": "bare"}},
        twin(plan, "a-2", **{CONNECTION_KEY: "plan-a"}),
    ]
    skipped_each = [[], ["a-1"], ["a-1", "a-2"], ["a-1", "a-2", "c-1"]]
    picks = filtered_ids(router, deployments, ["plan-a", "plan-c"], skipped_each)
    assert picks == [["a-1", "a-2"], ["a-2"], ["c-1"], []]


def test_a_deployment_the_router_replaced_changes_the_candidates_sent(fake: FakeOpenAI) -> None:
    from litellm.types.router import Deployment

    asked: list[list[str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append(
            sorted(c for candidate in body["candidates"] for c in candidate["allowed_connection_ids"])
        )
        empty = {"code": "no_candidates", "message": "none", "retry_at": None}
        resolution: dict[str, Any] = {
            "model": THRIFTY,
            "grouping": "tier",
            "category": None,
            "pool": [],
            "excluded": [],
        }
        resolved = {"resolved_at": "2026-12-01T12:00:00Z", "empty": empty, "refresh": []}
        return httpx.Response(200, json={**resolution, **resolved})

    router = proxy_router(fake)
    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(answer))
    hook = LadderProxyHook(router=router, client=client)
    cheap = next(d for d in group_deployments(router, THRIFTY) if d["model_info"]["id"] == "thrifty-cheap")

    async def ask() -> int:
        with pytest.raises(Exception, match="auto/") as refused:
            await hook.async_pre_call_hook(None, None, request(THRIFTY), "completion")
        return status_of(refused.value)[0]

    async def run() -> list[int]:
        codes = [await ask(), await ask()]
        renamed = {**cheap["model_info"], CONNECTION_KEY: "cheap-2"}
        router.upsert_deployment(  # as the proxy's refresh from its database does
            Deployment(model_name=THRIFTY, litellm_params=cheap["litellm_params"], model_info=renamed)
        )
        codes.append(await ask())
        return codes

    assert asyncio.run(run()) == [503, 503, 503]
    assert asked == [sorted([CHEAP, PLAN]), sorted([CHEAP, PLAN]), sorted(["cheap-2", PLAN])]


def test_the_hook_calls_the_ladder_over_aiohttp_or_over_httpx_without_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from ladder_client.aiohttp_transport import LadderAiohttpTransport

    hook = LadderProxyHook(url="http://ladder", token="olr_never-asked")
    assert isinstance(hook._make_client()._http._transport, LadderAiohttpTransport)

    # A proxy environment made before httpx-aiohttp joined it: the hook still starts, on httpx.
    monkeypatch.setitem(sys.modules, "httpx_aiohttp", None)
    monkeypatch.delitem(sys.modules, "ladder_client.aiohttp_transport")
    with caplog.at_level(logging.WARNING, logger="ladder_client.litellm_proxy"):
        transport = hook._make_client()._http._transport
    assert isinstance(transport, httpx.AsyncHTTPTransport)
    assert "install httpx-aiohttp" in caplog.text


def test_the_candidates_of_at_most_64_groups_are_kept(fake: FakeOpenAI) -> None:
    """A wildcard auto/* deployment makes a group of every name a client sends."""
    router = proxy_router(fake)
    hook = LadderProxyHook(url=refused_url(), token="olr_never-asked", router=router)
    deployments = group_deployments(router, THRIFTY)
    for index in range(GROUPS_KEPT + 10):
        hook._candidates(f"auto/name-{index}", [dict(d) for d in deployments])
    assert len(hook._groups) == GROUPS_KEPT
    assert next(iter(hook._groups)) == "auto/name-10"  # the oldest went first


def test_an_attempt_that_skipped_the_pre_call_hook_is_resolved_and_fails_closed(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = proxy_router(fake)
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router)
    thrifty = group_deployments(router, THRIFTY)
    subscription = group_deployments(router, SUBSCRIPTION)

    async def run() -> list[Any]:
        try:
            picked = await hook.async_filter_deployments(THRIFTY, thrifty, MESSAGES, {"metadata": {}})
            with pytest.raises(LadderPoolEmpty) as raised:
                await hook.async_filter_deployments(SUBSCRIPTION, subscription, MESSAGES, {"metadata": {}})
            assert raised.value.code == "no_verified_subscription_quota"
            return picked
        finally:
            await hook.aclose()

    assert [d["model_info"]["ladder_connection_id"] for d in asyncio.run(run())] == [PLAN]


def test_usage_is_batched_and_counted_once(ladder: Ladder, fake: FakeOpenAI) -> None:
    router = proxy_router(fake)
    sent: list[str] = []
    bodies: list[bytes] = []

    class Counting(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(f"{request.method} {request.url.path}")
            if request.url.path == "/api/v1/usage":
                bodies.append(request.content)
            return await super().handle_async_request(request)

    client = AsyncLadderClient(ladder.url, ladder.token, timeout_s=10, transport=Counting())
    hook = LadderProxyHook(router=router, client=client, reporter_options={"flush_interval_s": 60})
    litellm.logging_callback_manager.add_litellm_callback(hook)
    ladder.client().report_observation(PLAN, fake.plan.headers())

    async def run() -> None:
        for _ in range(3):
            await serve(hook, router, request(THRIFTY))
        # LiteLLM runs success hooks after the answer, in tasks of their own.
        for _ in range(100):
            if hook.loops.reporter.queue_length == 3:
                break
            await asyncio.sleep(0.05)
        assert hook.loops.reporter.queue_length == 3
        await hook.aclose()

    asyncio.run(run())
    assert fake.routes() == ["plan"] * 3
    assert sent.count("POST /api/v1/usage") == 1  # one batch of three
    assert sent.count("POST /api/v1/pools/resolve") == 3
    # Counted once each: three events, one per call id; the batch sent again counts nothing more.
    events = list(m.UsageEvent.objects.filter(connection_id=PLAN).order_by("id"))
    assert [(e.input_tokens, e.request_id.startswith("litellm:")) for e in events] == [
        (PROMPT_TOKENS, True)
    ] * 3
    replayed = httpx.post(
        f"{ladder.url}/api/v1/usage",
        content=bodies[0],
        headers={"Authorization": f"Bearer {ladder.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert replayed.status_code == 200
    assert m.UsageEvent.objects.filter(connection_id=PLAN).count() == 3


def test_a_full_queue_drops_with_a_counted_warning(caplog: pytest.LogCaptureFixture) -> None:
    hook = LadderProxyHook(
        client=AsyncLadderClient(refused_url(), "olr_never-asked", retries=0),
        reporter_options={"queue_max": 2},
    )
    event = UsageEvent(request_id="litellm:x", connection_id=PLAN, model="m", occurred_at=datetime.now(UTC))
    with caplog.at_level(logging.WARNING, logger="ladder_client.reporting"):
        accepted = [hook.loops.reporter.offer_usage(event) for _ in range(3)]
    assert accepted == [True, True, False]
    assert (hook.loops.reporter.dropped, hook.loops.reporter.queue_length) == (1, 2)
    assert any("usage queue full" in record.getMessage() for record in caplog.records)


# --- borrowed credentials -------------------------------------------------------------------


def test_a_deployment_that_opts_in_takes_its_key_from_the_ladder_for_that_attempt_only() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(
            200,
            json={"access_token": "borrowed-token", "expires_at": "2999-01-01T00:00:00Z", "account_id": None},
        )

    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(answer))
    hook = LadderProxyHook(client=client)
    keys = {"ladder_connection_id": PLAN, "ladder_provider": "claude", "ladder_model": "claude-sonnet-4-5"}
    deployment: dict[str, Any] = {
        "model_name": THRIFTY,
        "litellm_params": {"model": "openai/x", "api_key": "placeholder"},
        "model_info": {"id": "plan", **keys, BORROW_KEY: True},
    }
    pool = [["claude", "claude-sonnet-4-5", [PLAN]]]
    hook._pools["r1"] = pool  # as the pre-call hook leaves it
    data = {"metadata": {POOL_KEY: pool, REQUEST_KEY: "r1"}}

    async def run() -> list[list[Any]]:
        return [await hook.async_filter_deployments(THRIFTY, [deployment], MESSAGES, data) for _ in range(2)]

    first, second = asyncio.run(run())
    assert first[0]["litellm_params"]["api_key"] == second[0]["litellm_params"]["api_key"] == "borrowed-token"
    assert deployment["litellm_params"]["api_key"] == "placeholder"  # the router's own copy untouched
    assert asked == [f"/api/v1/connections/{PLAN}/credential"]  # cached until shortly before expiry


def test_the_filter_never_trusts_a_pool_the_client_put_in_the_metadata(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    """A request that skipped the pre-call hook carries only what the client sent: a ``ladder_pool``
    there names deployments the ladder never chose (here the plan, unverified, for auto/subscription)."""
    router = proxy_router(fake)
    hook = LadderProxyHook(url=ladder.url, token=ladder.token, router=router)
    subscription = group_deployments(router, SUBSCRIPTION)
    forged = {"metadata": {POOL_KEY: [["claude", "claude-sonnet-4-5", [PLAN]]], REQUEST_KEY: "forged"}}

    async def run() -> None:
        try:
            with pytest.raises(LadderPoolEmpty):
                await hook.async_filter_deployments(SUBSCRIPTION, subscription, MESSAGES, forged)
        finally:
            await hook.aclose()

    asyncio.run(run())
