"""The strategy's and the callback's edges, with real LiteLLM Routers: incomplete deployments,
groups outside the ladder, a ladder that cannot be reached, and reports that must not repeat."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from ladder import models as m
from ladder_client import LadderClient, LadderError
from ladder_client.aclient import AsyncLadderClient
from ladder_client.reporting import PerLoop
from tests.ladder_client.conftest import CHEAP, CHEAP_MODEL, PLAN, PLAN_MODEL, CountingTransport, Ladder
from tests.ladder_client.fake_openai import FakeOpenAI
from tests.ladder_client.sockets import refused_url

litellm = pytest.importorskip("litellm")

from ladder_client.litellm_deployments import LadderConfigError  # noqa: E402
from ladder_client.litellm_router import (  # noqa: E402
    LadderRoutingStrategy,
    install_ladder,
    uninstall_callback,
)

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "hello"}]
CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
)


@pytest.fixture(autouse=True)
def _litellm_callbacks_restored() -> Iterator[None]:
    """LiteLLM keeps callbacks process-wide (and copies them into several lists): none outlives its test."""
    saved = {name: list(getattr(litellm, name)) for name in CALLBACK_LISTS}
    yield
    for name, callbacks in saved.items():
        getattr(litellm, name)[:] = callbacks


def deployment(fake: FakeOpenAI, group: str, route: str, **ladder_keys: str) -> dict[str, Any]:
    return {
        "model_name": group,
        "litellm_params": {"model": f"openai/{route}-model", "api_base": fake.base(route), "api_key": route},
        "model_info": {"id": f"{group}-{route}", **ladder_keys},
    }


def plan_keys() -> dict[str, str]:
    return {"ladder_connection_id": PLAN, "ladder_provider": PLAN_MODEL[0], "ladder_model": PLAN_MODEL[1]}


def cheap_keys() -> dict[str, str]:
    return {"ladder_connection_id": CHEAP, "ladder_provider": CHEAP_MODEL[0], "ladder_model": CHEAP_MODEL[1]}


def routed(router: Any, client: LadderClient) -> Any:
    _, callback = install_ladder(router, client)
    return callback


def test_it_refuses_a_deployment_without_its_ladder_keys(fake: FakeOpenAI) -> None:
    incomplete = {"ladder_connection_id": PLAN, "ladder_provider": PLAN_MODEL[0]}
    router = litellm.Router(
        model_list=[deployment(fake, "auto/thrifty", "plan", **incomplete)], num_retries=0
    )
    callback = routed(router, LadderClient(refused_url(), "olr_never-asked-token"))
    try:
        with pytest.raises(LadderConfigError, match="auto/thrifty-plan.*ladder_model"):
            router.completion(model="auto/thrifty", messages=MESSAGES)
    finally:
        uninstall_callback(callback)
    assert fake.routes() == []


def test_it_gives_a_group_outside_the_ladder_its_first_deployment(fake: FakeOpenAI) -> None:
    router = litellm.Router(
        model_list=[deployment(fake, "paid", "paid"), deployment(fake, "paid", "cheap")], num_retries=0
    )
    # The ladder is unreachable: a group it does not own never asks it.
    callback = routed(router, LadderClient(refused_url(), "olr_never-asked-token", retries=0))
    try:
        router.completion(model="paid", messages=MESSAGES)
    finally:
        uninstall_callback(callback)
    assert fake.routes() == ["paid"]


def test_it_fails_closed_when_the_ladder_cannot_be_asked(fake: FakeOpenAI) -> None:
    router = litellm.Router(
        model_list=[
            deployment(fake, "auto/thrifty", "cheap", **cheap_keys()),
            deployment(fake, "paid", "paid"),
        ],
        num_retries=0,
        fallbacks=[{"auto/thrifty": ["paid"]}],
    )
    callback = routed(
        router, LadderClient(refused_url(), "olr_never-asked-token", retries=1, retry_backoff_s=0)
    )
    try:
        with pytest.raises(LadderError) as raised:
            asyncio.run(router.acompletion(model="auto/thrifty", messages=MESSAGES))
    finally:
        uninstall_callback(callback)
    assert raised.value.code == "connection_failed"
    assert fake.routes() == []  # neither a guess nor the configured paid fallback


def test_uninstall_leaves_the_callback_in_no_litellm_list(fake: FakeOpenAI) -> None:
    router = litellm.Router(model_list=[deployment(fake, "paid", "paid")], num_retries=0)
    callback = routed(router, LadderClient(refused_url(), "olr_never-asked-token", retries=0))
    router.completion(model="paid", messages=MESSAGES)  # LiteLLM copies callbacks on first use

    uninstall_callback(callback)

    assert not [name for name in CALLBACK_LISTS if callback in getattr(litellm, name)]


def test_the_example_of_the_docs_runs(
    ladder: Ladder, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "docs" / "LITELLM.md").read_text(encoding="utf-8")
    example = text.split("## A runnable example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    for name, value in {
        "LADDER_URL": ladder.url,
        "LADDER_TOKEN": ladder.token,
        "PLAN_API_BASE": fake.base("plan"),
        "PLAN_API_KEY": "plan-key",
        "CHEAP_API_BASE": fake.base("cheap"),
        "OPENAI_API_KEY": "cheap-key",
    }.items():
        monkeypatch.setenv(name, value)

    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(example, "docs/LITELLM.md", "exec"), namespace)
    namespace["ladder"].close()  # the example's client: an open connection outlives the test (see gateway)

    # LiteLLM logs to stdout too: the example's own lines are those about the groups.
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("auto/")]
    assert lines[0] == f"auto/thrifty -> {PLAN_MODEL[1]}"
    # The plan had no reading: auto/subscription serves it only once the thrifty call's headers,
    # reported in the background, have arrived.
    assert lines[1] in (
        f"auto/subscription -> {PLAN_MODEL[1]}",
        "auto/subscription -> no pool: no_verified_subscription_quota retry at None",
    )
    assert fake.routes()[0] == "plan"


def test_it_also_installs_through_the_deprecated_set_custom_routing_strategy(
    gateway: LadderClient, fake: FakeOpenAI
) -> None:
    router = litellm.Router(
        model_list=[
            deployment(fake, "auto/thrifty", "cheap", **cheap_keys()),
            deployment(fake, "auto/thrifty", "plan", **plan_keys()),
        ],
        num_retries=0,
    )
    with pytest.deprecated_call():
        router.set_custom_routing_strategy(LadderRoutingStrategy(router, gateway))

    router.completion(model="auto/thrifty", messages=MESSAGES)

    assert fake.routes() == ["plan"]  # the ladder's order (plan first), not the model list's


def test_the_async_path_resolves_on_the_loop_and_sends_usage_in_one_batch(
    ladder: Ladder, fake: FakeOpenAI
) -> None:
    router = litellm.Router(
        model_list=[deployment(fake, "auto/thrifty", "cheap", **cheap_keys())], num_retries=0
    )
    sent = CountingTransport()
    client = LadderClient(ladder.url, ladder.token, transport=sent)
    resolved: list[str] = []

    class Counting(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            resolved.append(f"{request.method} {request.url.path}")
            return await super().handle_async_request(request)

    strategy, callback = install_ladder(router, client)
    strategy.loops = callback.loops = PerLoop(
        lambda: AsyncLadderClient(ladder.url, ladder.token, transport=Counting()),
        reporter_options={"flush_interval_s": 60},
    )

    async def run() -> int:
        for _ in range(3):
            await router.acompletion(model="auto/thrifty", messages=MESSAGES)
        for _ in range(100):  # LiteLLM runs success hooks after the answer, in tasks of their own
            reporter = callback.loops.current_reporter
            if reporter is not None and reporter.queued == 3:
                break
            await asyncio.sleep(0.05)
        return callback.loops.current_reporter.queue_length if callback.loops.current_reporter else 0

    try:
        queued = asyncio.run(run())
    finally:
        uninstall_callback(callback)  # sends what is queued, synchronously: one batch
        client.close()
    assert fake.routes() == ["cheap"] * 3
    assert resolved.count("POST /api/v1/pools/resolve") == 3  # on the loop's own client
    assert queued == 3
    assert sent.sent == ["POST /api/v1/usage"]  # the sync client: the one batch, nothing else
    assert m.UsageEvent.objects.filter(connection_id=CHEAP).count() == 3


def test_a_deployment_that_opts_in_calls_with_the_key_the_ladder_lends(fake: FakeOpenAI) -> None:
    lent: list[str] = []

    def ladder_answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/credential"):
            lent.append(request.url.path)
            body = {"access_token": "lent-token", "expires_at": "2999-01-01T00:00:00Z", "account_id": None}
            return httpx.Response(200, json=body)
        pool = [
            {
                "provider": PLAN_MODEL[0],
                "model": PLAN_MODEL[1],
                "rung": "subscription",
                "rung_index": 0,
                "connection_id": None,
                "allowed_connection_ids": [PLAN],
            }
        ]
        now = datetime.now(UTC).isoformat()
        resolution = {
            "model": "auto/thrifty",
            "grouping": "tier",
            "category": None,
            "resolved_at": now,
            "pool": pool,
            "excluded": [],
            "empty": None,
            "refresh": [],
        }
        return httpx.Response(200, json=resolution)

    router = litellm.Router(
        model_list=[deployment(fake, "auto/thrifty", "plan", **plan_keys(), ladder_borrow_credential=True)],  # type: ignore[arg-type]
        num_retries=0,
    )
    client = LadderClient("http://ladder.invalid", "t", transport=httpx.MockTransport(ladder_answer))
    loops = PerLoop(
        lambda: AsyncLadderClient("http://ladder.invalid", "t", transport=httpx.MockTransport(ladder_answer))
    )
    strategy = LadderRoutingStrategy(router, client, loops=loops)
    router.register_plugin(strategy)

    async def run() -> None:
        for _ in range(2):
            await router.acompletion(model="auto/thrifty", messages=MESSAGES)

    asyncio.run(run())
    router.completion(model="auto/thrifty", messages=MESSAGES)  # the synchronous path: cached too
    assert fake.routes() == ["plan"] * 3
    assert fake.keys == ["lent-token"] * 3
    assert lent == [f"/api/v1/connections/{PLAN}/credential"]
    assert router.get_model_list(model_name="auto/thrifty")[0]["litellm_params"]["api_key"] == "plan"
