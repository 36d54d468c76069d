"""A day of gateway traffic through the API only: the plan first, a climb down the ladder as the plan
window and the cheap budget run out, and the way back up when the window resets and the day ends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.gateway.conftest import Api, Clock, RefreshRecorder, assert_schema, make_connection, set_config

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 9, 15, tzinfo=UTC)
U = "anthropic-ratelimit-unified-"
CANDIDATES = [
    {"provider": "claude", "model": "claude-sonnet-4-5", "allowed_connection_ids": ["max"]},
    {"provider": "openai", "model": "gpt-5-mini", "allowed_connection_ids": ["key"]},
]


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return DAY.replace(hour=hour, minute=minute, second=second)


def claude_headers(used: float, reset_at: datetime, *, rejected: bool = False) -> dict[str, str]:
    return {
        f"{U}5h-status": "rejected" if rejected else "allowed",
        f"{U}5h-utilization": str(used),
        f"{U}5h-reset": str(int(reset_at.timestamp())),
    }


class Gateway:
    def __init__(self, api: Api, clock: Clock) -> None:
        self.api = api
        self.clock = clock

    def post(self, url: str, path: str, body: Any) -> dict[str, Any]:
        response = self.api.post(url, body)
        assert response.status_code == 200, response.content
        return assert_schema(response, path, "post")

    def pool(self, model: str = "auto/thrifty") -> dict[str, Any]:
        return self.post(
            "/api/v1/pools/resolve", "/api/v1/pools/resolve", {"model": model, "candidates": CANDIDATES}
        )

    def rungs(self, model: str = "auto/thrifty") -> list[tuple[str, list[str]]]:
        return [(e["rung"], e["allowed_connection_ids"]) for e in self.pool(model)["pool"]]

    def observe(self, headers: dict[str, str]) -> dict[str, Any]:
        return self.post(
            "/api/v1/connections/max/observations",
            "/api/v1/connections/{connection_id}/observations",
            {"status": 200, "headers": headers},
        )

    def usage(self, request_id: str, connection_id: str, model: str, **fields: Any) -> dict[str, Any]:
        body = {"request_id": request_id, "connection_id": connection_id, "model": model, **fields}
        return self.post("/api/v1/usage", "/api/v1/usage", body)


def test_it_climbs_down_the_ladder_and_back_over_a_day(
    gateway: Api, clock: Clock, refreshes: RefreshRecorder
) -> None:
    set_config(rung_budget_usd={"cheap": 1.0, "premium": 0}, budget_period="day")
    make_connection("max", "claude", "oauth")
    make_connection("key", "openai", "apikey")
    day = Gateway(gateway, clock)
    first_reset = at(13)

    # 08:00 the plan has quota: it comes first, the cheap key after it.
    clock.now = at(8)
    day.observe(claude_headers(0.2, first_reset))
    assert day.rungs() == [("subscription", ["max"]), ("cheap", ["key"])]
    assert day.rungs("auto/subscription") == [("subscription", ["max"])]
    plan_usage = day.usage("r1", "max", "claude-sonnet-4-5", input_tokens=2_000_000, output_tokens=100_000)
    assert plan_usage["events"][0]["budget_cost_usd"] == 0.0

    # 10:00 the window is nearly spent: the plan drops out, auto/subscription fails closed.
    clock.now = at(10)
    latched = day.observe(claude_headers(0.99, first_reset))
    assert latched["reading"]["windows"][0]["latched"] is True
    assert day.rungs() == [("cheap", ["key"])]
    closed = day.pool("auto/subscription")
    assert closed["pool"] == []
    assert closed["empty"]["code"] == "no_verified_subscription_quota"
    assert closed["empty"]["retry_at"] == "2026-09-15T13:00:00Z"

    # 10:05 a request slipped through and got a 429: a cooldown, never past the reset.
    clock.now = at(10, 5)
    failure = day.post(
        "/api/v1/connections/max/failures",
        "/api/v1/connections/{connection_id}/failures",
        {
            "status": 429,
            "headers": claude_headers(1.0, first_reset, rejected=True),
            "model": "claude-sonnet-4-5",
        },
    )
    assert failure["classification"] == "quota_exhausted"
    assert failure["cooldown_until"] <= "2026-09-15T13:00:00Z"

    # 10:10 the cheap key spends its $1 budget: every rung is out until the plan resets at 13:00.
    clock.now = at(10, 10)
    day.usage("r2", "key", "gpt-5-mini", cost_usd=0.6)
    spent = day.usage("r3", "key", "gpt-5-mini", cost_usd=0.5)
    assert spent["budgets"]["cheap"]["spent_usd"] == 1.1
    empty = day.pool()
    assert empty["pool"] == []
    assert empty["empty"]["code"] == "all_rungs_exhausted"
    assert empty["empty"]["retry_at"] == "2026-09-15T13:00:00Z"
    assert {x["connection_id"]: x["reason"] for x in empty["excluded"]} == {
        "max": "quota_exhausted",
        "key": "budget_exhausted",
    }

    # 13:00:01 the window has reset: auto/thrifty tries the plan at once and asks for a reading;
    # auto/subscription waits for that reading.
    clock.now = at(13, 0, 1)
    refreshes.calls.clear()
    assert day.rungs() == [("subscription", ["max"])]
    assert refreshes.calls == [["max"]]
    waiting = day.pool("auto/subscription")
    assert {x["connection_id"]: x["reason"] for x in waiting["excluded"]} == {
        "max": "window_reset_passed",
        "key": "not_plan_billing",
    }

    # 13:00:05 the fresh reading lands: the plan is back for auto/subscription too.
    clock.now = at(13, 0, 5)
    back = day.observe(claude_headers(0.03, at(18)))
    assert back["reading"]["windows"][0]["latched"] is False
    assert day.rungs("auto/subscription") == [("subscription", ["max"])]

    # The next day the cheap budget is back.
    clock.now = at(0, 0, 30).replace(day=16)
    assert ("cheap", ["key"]) in day.rungs()
    assert day.usage("r4", "key", "gpt-5-mini", cost_usd=0.2)["budgets"]["cheap"]["spent_usd"] == 0.2
