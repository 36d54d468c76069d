"""A real LiteLLM Router routing through a running ladder, against a local OpenAI-compatible fake.

The plan serves while it has quota; the fake upstream spends it (a 429 the Claude adapter reads as
quota exhaustion, reset a few seconds ahead); the callback reports the 429, the ladder latches the
window and cools the plan down to the reset, and traffic climbs to the cheap key; `auto/subscription`
fails closed with the reset as `retry_at`, and LiteLLM's configured fallbacks never reach the paid
group; after the reset the plan serves again and its fresh headers bring a reading above the floor.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import pytest

from ladder.services.state import configuration_update
from ladder_client import LadderClient
from tests.ladder_client.conftest import CHEAP, CHEAP_MODEL, PLAN, PLAN_MODEL, Ladder
from tests.ladder_client.fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI

litellm = pytest.importorskip("litellm")
from ladder_client.litellm_deployments import LadderPoolEmpty  # noqa: E402
from ladder_client.litellm_router import (  # noqa: E402 - needs LiteLLM, an optional extra
    install_ladder,
    uninstall_callback,
)

pytestmark = pytest.mark.slow

THRIFTY = "auto/thrifty"
SUBSCRIPTION = "auto/subscription"
RESET_IN_S = 3.0
WAIT_S = 10.0
MESSAGES = [{"role": "user", "content": "hello"}]
# The cheap key's price as LiteLLM knows it: deliberately not the ladder catalog's ($0.15/$0.60 per
# million), so the spend the ladder shows can only have come from LiteLLM's response cost.
CHEAP_INPUT_USD_PER_TOKEN = 1e-6
CHEAP_OUTPUT_USD_PER_TOKEN = 2e-6

T = TypeVar("T")


def plan_deployment(fake: FakeOpenAI, group: str) -> dict[str, Any]:
    return {
        "model_name": group,
        "litellm_params": {
            "model": f"openai/{PLAN_MODEL[1]}",
            "api_base": fake.base("plan"),
            "api_key": "plan",
        },
        "model_info": {
            "id": f"{group}-plan",
            "ladder_connection_id": PLAN,
            "ladder_provider": PLAN_MODEL[0],
            "ladder_model": PLAN_MODEL[1],
        },
    }


def model_list(fake: FakeOpenAI) -> list[dict[str, Any]]:
    cheap = {
        "model_name": THRIFTY,
        "litellm_params": {
            "model": f"openai/{CHEAP_MODEL[1]}",
            "api_base": fake.base("cheap"),
            "api_key": "cheap",
            "input_cost_per_token": CHEAP_INPUT_USD_PER_TOKEN,
            "output_cost_per_token": CHEAP_OUTPUT_USD_PER_TOKEN,
        },
        "model_info": {
            "id": "thrifty-cheap",
            "ladder_connection_id": CHEAP,
            "ladder_provider": CHEAP_MODEL[0],
            "ladder_model": CHEAP_MODEL[1],
        },
    }
    # A group outside the ladder, named as every auto group's LiteLLM fallback: it must never serve.
    paid = {
        "model_name": "paid",
        "litellm_params": {"model": "openai/gpt-4o", "api_base": fake.base("paid"), "api_key": "paid"},
        "model_info": {"id": "paid"},
    }
    return [plan_deployment(fake, THRIFTY), cheap, plan_deployment(fake, SUBSCRIPTION), paid]


async def eventually(check: Callable[[], T], accept: Callable[[T], bool], what: str) -> T:
    """Poll the ladder (in a thread, so the callbacks' tasks keep running) until ``accept``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = await asyncio.to_thread(check)
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {value!r} after {WAIT_S:g}s")
        await asyncio.sleep(0.05)


async def ask(router: Any, group: str) -> Any:
    return await router.acompletion(model=group, messages=MESSAGES)


def escalations(ladder: Ladder) -> list[tuple[str, str | None, str | None]]:
    answer = httpx.get(
        f"{ladder.url}/api/v1/escalations", headers={"Authorization": f"Bearer {ladder.token}"}, timeout=10
    )
    answer.raise_for_status()
    return [(e["auto_id"], e["from_rung"], e["to_rung"]) for e in answer.json()["escalations"]]


def test_it_routes_plan_first_climbs_on_exhaustion_and_comes_back(
    ladder: Ladder, fake: FakeOpenAI, hot: Any
) -> None:
    configuration_update(rung_budget_usd={"cheap": 1.0})
    client = LadderClient(ladder.url, ladder.token, timeout_s=10)
    # A fresh, verified reading of the plan (auto/subscription serves only on one): its headers.
    seeded = client.report_observation(PLAN, fake.plan.headers())
    assert seeded is not None
    router = litellm.Router(
        model_list=model_list(fake),
        num_retries=1,  # the attempt after a 429 asks the ladder again, which has heard of the 429
        retry_after=0,
        fallbacks=[{THRIFTY: ["paid"]}, {SUBSCRIPTION: ["paid"]}],
    )
    _, callback = install_ladder(router, client)
    try:
        # The synchronous path: the plan serves.
        first = router.completion(model=THRIFTY, messages=MESSAGES)
        assert fake.routes() == ["plan"]
        assert first.usage.prompt_tokens == PROMPT_TOKENS

        reset_at, costs = asyncio.run(scenario(router, client, fake))
    finally:
        uninstall_callback(callback)
        client.close()

    plan = LadderClient(ladder.url, ladder.token).connection(PLAN)
    assert plan.cooldown_until == reset_at  # the 429's cooldown, clamped to its reset, has run out
    assert plan.reading is not None
    window = plan.reading.window("5h")
    assert window is not None
    assert (window.remaining_pct, window.latched) == (95.0, False)
    assert plan.reading.source == "headers"
    assert costs  # the cheap rung's spend was LiteLLM's cost of exactly the calls it served
    assert "paid" not in fake.routes()
    assert escalations(ladder) == [
        (THRIFTY, "subscription", "cheap"),
        (SUBSCRIPTION, "subscription", None),
        (THRIFTY, "cheap", "subscription"),
        (SUBSCRIPTION, None, "subscription"),
    ]


async def scenario(router: Any, client: LadderClient, fake: FakeOpenAI) -> tuple[datetime, list[float]]:
    # 1. While the plan has quota, both auto ids are served by it.
    await ask(router, THRIFTY)
    await ask(router, SUBSCRIPTION)
    assert fake.routes() == ["plan"] * 3

    # 2. The plan's window is spent: its next answer is a 429 that resets RESET_IN_S from now. The
    # callback reports it before LiteLLM's retry asks the ladder again, which now says: cheap.
    reset_at = fake.exhaust_plan(reset_in_s=RESET_IN_S)
    climbed = await ask(router, THRIFTY)
    assert fake.routes()[3:] == ["plan", "cheap"]
    plan = await asyncio.to_thread(client.connection, PLAN)
    assert plan.cooldown_until == reset_at
    assert plan.reading is not None
    spent = plan.reading.window("5h")
    assert spent is not None
    assert (spent.remaining_pct, spent.latched, spent.reset_at) == (0.0, True, reset_at)

    # 3. The plan cools down: thrifty traffic goes straight to the cheap key.
    cheap_again = await ask(router, THRIFTY)
    assert fake.routes()[5:] == ["cheap"]

    # 4. auto/subscription fails closed, with the reset as retry_at; LiteLLM's fallback to "paid"
    # is refused, and LiteLLM does not retry the empty answer.
    with pytest.raises(LadderPoolEmpty) as raised:
        await ask(router, SUBSCRIPTION)
    assert raised.value.retry_at == reset_at
    assert raised.value.code == "no_verified_subscription_quota"
    assert [x.reason for x in raised.value.resolution.excluded] == ["cooling_down"]
    assert fake.routes()[6:] == []

    # 5. Usage reached the ladder: the cheap rung's spend is LiteLLM's cost of the two cheap calls.
    costs = [response._hidden_params["response_cost"] for response in (climbed, cheap_again)]
    expected = 2 * (
        PROMPT_TOKENS * CHEAP_INPUT_USD_PER_TOKEN + COMPLETION_TOKENS * CHEAP_OUTPUT_USD_PER_TOKEN
    )
    assert sum(costs) == pytest.approx(expected)
    await eventually(
        lambda: client.connections().budgets["cheap"].spent_usd,
        lambda spent_usd: spent_usd == pytest.approx(expected, abs=1e-6),
        "the cheap rung's spend",
    )

    # 6. After the reset the plan serves again; its fresh headers lift the latch.
    await asyncio.sleep(max(0.0, (reset_at - datetime.now(UTC)).total_seconds()) + 0.2)
    await ask(router, THRIFTY)
    assert fake.routes()[6:] == ["plan"]
    await eventually(
        lambda: client.connection(PLAN).reading,
        lambda reading: reading is not None and (reading.window("5h") or spent).remaining_pct == 95.0,
        "the plan's reading after the reset",
    )
    await ask(router, SUBSCRIPTION)
    assert fake.routes()[7:] == ["plan"]
    return reset_at, costs
