"""Redis stopped mid-run, for real: a gunicorn web process, a Celery worker and beat on a Redis of the
test's own, which the test stops and starts again on the same port.

While Redis is down the API answers from the database: the same resolution as before the fault,
``auto/subscription`` still fails closed (the spent plan stays out, nothing paid appears), usage
reports still count, and ``/readyz`` says that Redis is down (200, "degraded": the database is up).
When Redis is back, everything recovers: ``/readyz`` is ok again and a resolution's refresh request
is queued and polled by the worker, whose reading lands.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from tests.reliability.conftest import AUTH, TOKEN_SPEC
from tests.reliability.processes import Database, Processes, RedisServer, seed, wait_until

pytestmark = pytest.mark.slow

FAR_FUTURE = "2099-01-01T00:00:00Z"  # no beat fan-out polls them: only requested refreshes do
PAID_MODEL = "anthropic/claude-sonnet-4.5"  # openrouter, $3/Mtok input: the premium rung


def spec(upstream: FakeUpstream) -> dict[str, Any]:
    def connection(cid: str, provider: str, auth_type: str, kind: str) -> dict[str, Any]:
        return {
            "id": cid,
            "provider": provider,
            "auth_type": auth_type,
            "base_url": upstream.url_for(kind, cid),
            "credential": f"token-{cid}",
            "next_refresh_at": FAR_FUTURE,
        }

    return {
        "config": {"max_reading_age_s": 3600, "rung_budget_usd": {"premium": 1000}},
        "connections": [
            connection("plan-ok", "claude", "oauth", "claude-oauth"),
            connection("plan-spent", "claude", "oauth", "claude-oauth"),
            connection("plan-new", "zai", "apikey", "zai-glm"),  # no reading yet
            connection("paid", "openrouter", "apikey", "openrouter"),
        ],
        "readings": [
            {
                "connection_id": "plan-ok",
                "windows": [{"name": "5h", "remaining_pct": 60, "reset_in_s": 7200}],
            },
            {
                "connection_id": "plan-spent",
                "windows": [{"name": "5h", "remaining_pct": 1, "reset_in_s": 7200}],
            },
        ],
        "tokens": [TOKEN_SPEC],
    }


def resolve(web: httpx.Client, model: str = "auto/subscription") -> dict[str, Any]:
    response = web.post("/api/v1/pools/resolve", json={"model": model})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    body.pop("resolved_at")
    return body


def pooled(resolution: dict[str, Any]) -> set[str]:
    return {cid for entry in resolution["pool"] for cid in entry["allowed_connection_ids"]}


def reasons(resolution: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in resolution["excluded"]:
        found.setdefault(row["connection_id"], set()).add(row["reason"])
    return found


def usage_batch(prefix: str, costs: list[str]) -> dict[str, Any]:
    return {
        "events": [
            {
                "request_id": f"{prefix}-{index}",
                "connection_id": "paid",
                "model": PAID_MODEL,
                "input_tokens": 100,
                "output_tokens": 10,
                "cost_usd": float(cost),
            }
            for index, cost in enumerate(costs)
        ]
    }


def test_it_answers_from_the_database_while_redis_is_down_and_recovers(
    ladder_env: dict[str, str],
    database: Database,
    redis_server: RedisServer,
    processes: Processes,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
) -> None:
    env = {**ladder_env, "LADDER_REFRESH_BEAT_S": "1", "LADDER_REFRESH_REQUEST_DEDUPE_S": "5"}
    seed(env, spec(upstream))
    control.set_remaining("zai-glm", 50, connection="plan-new")
    web_process = processes.web(env)
    processes.worker(env, concurrency=1)
    processes.beat(env)
    web = httpx.Client(base_url=web_process.url(), headers=AUTH, timeout=10)
    wait_until(
        lambda: web.get("/readyz").json()["status"] == "ok", timeout_s=20, what="readyz ok (beat ticked)"
    )

    def landed(cid: str, model: str = "auto/subscription") -> bool:
        # Each resolution lists cid until its reading lands; one of them gets queued and polled.
        resolve(web, model)
        return bool(
            database.scalar("SELECT COUNT(*) FROM ladder_quotareading WHERE connection_id = %s", (cid,))
        )

    first = resolve(web)
    assert first["refresh"] == ["plan-new"]
    wait_until(lambda: landed("plan-new"), timeout_s=30, interval_s=0.3, what="plan-new's refresh")
    wait_until(lambda: landed("paid", "auto/thrifty"), timeout_s=30, interval_s=0.3, what="paid's refresh")
    before = resolve(web)
    assert pooled(before) == {"plan-ok", "plan-new"}
    assert reasons(before)["plan-spent"] == {"quota_exhausted"}
    assert reasons(before)["paid"] == {"not_plan_billing"}
    assert before["refresh"] == []
    before_thrifty = resolve(web, "auto/thrifty")

    redis_server.stop()
    assert not redis_server.ping()

    started = time.monotonic()
    during = resolve(web)
    first_resolve_s = time.monotonic() - started
    assert during == before  # from the database, exactly as before: fail closed, nothing paid
    assert resolve(web, "auto/thrifty") == before_thrifty
    ready = web.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "degraded"
    assert ready.json()["database"] == "ok"
    assert ready.json()["redis"].startswith("down")
    costs = ["0.100001", "0.2", "0.000003", "1.5", "0.25"]
    report = web.post("/api/v1/usage", json=usage_batch("during-outage", costs))
    assert report.status_code == 200, report.text
    assert Decimal(str(report.json()["budgets"]["premium"]["spent_usd"])) == sum(map(Decimal, costs))
    assert web.get("/v1/models").status_code == 200
    # An operator adds a plan while Redis is down: it is listed for a refresh that cannot be queued.
    seed(env, {"connections": [{**spec(upstream)["connections"][2], "id": "plan-added"}]})
    control.set_remaining("zai-glm", 50, connection="plan-added")
    added = resolve(web)
    assert added["refresh"] == ["plan-added"]
    assert reasons(added)["plan-added"] == {"no_reading"}
    assert pooled(added) == pooled(before)
    assert not landed("plan-added")

    restarted = time.monotonic()
    redis_server.start()
    wait_until(lambda: web.get("/readyz").json()["status"] == "ok", timeout_s=30, what="readyz ok again")
    readyz_back_s = time.monotonic() - restarted
    wait_until(lambda: landed("plan-added"), timeout_s=45, interval_s=0.5, what="plan-added's refresh")
    refresh_back_s = time.monotonic() - restarted
    after = resolve(web)
    assert pooled(after) == {"plan-ok", "plan-new", "plan-added"}
    assert reasons(after)["plan-spent"] == {"quota_exhausted"}
    assert after["refresh"] == []
    spent = web.get("/api/v1/connections").json()["budgets"]["premium"]["spent_usd"]
    assert Decimal(str(spent)) == sum(map(Decimal, costs))
    processes.check_alive()
    print(
        f"FIGURES redis_outage first_resolve_s={first_resolve_s:.3f} readyz_back_s={readyz_back_s:.2f} "
        f"refresh_back_s={refresh_back_s:.2f}"
    )
