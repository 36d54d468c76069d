"""Scale-out (docs/DEPLOY.md): two gunicorn web processes, two Celery workers and one beat against one
PostgreSQL database (the test's own) and one Redis (the test's own), as on several machines.

They agree:
- each due connection is refreshed exactly once per due period: every connection's readings are at
  least ``refresh_interval_s`` apart, and each upstream poll stored exactly one reading;
- either web process gives the same resolution for the same state (equal after parsing, minus
  ``resolved_at``), and a write through one is seen by the other at once;
- spend is exact under concurrent usage reports split across both web processes, replays and
  requests racing on one request_id included: the budgets equal the sum of the distinct events.

PostgreSQL only: one SQLite file shared by processes on several machines is not a deployment.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream
from tests.reliability.conftest import AUTH, TOKEN_SPEC, Stack
from tests.reliability.processes import (
    WORKER_READY,
    Database,
    postgres_requested,
    seed,
    wait_until,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not postgres_requested(),
        reason="scale-out runs on PostgreSQL (DATABASE_URL=postgres://…); this run uses SQLite",
    ),
]

REFRESH_INTERVAL_S = 4
POLL_DELAY_MS = 1500  # a fan-out outlasts the 1 s beat period: fan-outs overlap
REFRESH_RUN_S = 20.0  # beat runs this long: several due periods of every connection
PLANS = [f"plan-{index:02d}" for index in range(12)]
PAID, PAID_MODEL = "paid", "anthropic/claude-sonnet-4.5"
REPORTERS, REPORTS_EACH = 8, 15
RACES = 10
MODELS = ("auto/subscription", "auto/thrifty", "auto/coding:thrifty", "auto/chat:subscription")


def spec(upstream: FakeUpstream) -> dict[str, Any]:
    connections = [
        {
            "id": cid,
            "provider": "zai",
            "auth_type": "apikey",
            "base_url": upstream.url_for("zai-glm", cid),
            "credential": f"token-{cid}",
        }
        for cid in PLANS
    ]
    connections.append(
        {
            "id": PAID,
            "provider": "openrouter",
            "auth_type": "apikey",
            "base_url": upstream.url_for("openrouter", PAID),
            "credential": "token-paid",
        }
    )
    return {
        "config": {
            "refresh_interval_s": REFRESH_INTERVAL_S,
            "max_reading_age_s": 900,
            "rung_budget_usd": {"premium": 1_000_000},
        },
        "connections": connections,
        "tokens": [TOKEN_SPEC],
    }


def readings_by_connection(database: Database) -> dict[str, list[datetime]]:
    found: dict[str, list[datetime]] = defaultdict(list)
    for cid, fetched_at in database.query(
        "SELECT connection_id, fetched_at FROM ladder_quotareading ORDER BY connection_id, fetched_at"
    ):
        found[cid].append(fetched_at)
    return found


def resolution(web: httpx.Client, model: str) -> dict[str, Any]:
    response = web.post("/api/v1/pools/resolve", json={"model": model})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    body.pop("resolved_at")
    return body


def racers(
    report: Callable[[int, list[dict[str, Any]]], httpx.Response],
    events: list[dict[str, Any]],
    answers: list[httpx.Response],
) -> list[threading.Thread]:
    """Two threads that send the same report to web process 0 and 1 at the same moment."""
    barrier = threading.Barrier(2)

    def send(which: int) -> None:
        barrier.wait()
        answers.append(report(which, events))

    return [threading.Thread(target=send, args=(which,)) for which in (0, 1)]


FAN_OUT_DONE = re.compile(r"refresh_due\[[^\]]+\] succeeded in [0-9.]+s: \{'claimed': (\d+)")


def claims_logged(log: str) -> list[int]:
    """The connections each finished fan-out of a worker claimed, from its log."""
    return [int(count) for count in FAN_OUT_DONE.findall(log)]


def state_version(database: Database) -> tuple[int, int]:
    """The state version and the live version (readings, latches, cooldowns): a resolution's inputs
    changed when either did."""
    value, live = database.query("SELECT value, live FROM ladder_stateversion WHERE id = 1")[0]
    return int(value), int(live)


def test_it_agrees_across_two_web_processes_and_two_workers(stack: Stack) -> None:
    database, processes, upstream, control = stack.database, stack.processes, stack.upstream, stack.control
    env = {**stack.env, "LADDER_REFRESH_BEAT_S": "1"}
    seed(env, spec(upstream))
    control.set_remaining("zai-glm", 60)
    control.slow(POLL_DELAY_MS, kind="zai-glm")
    webs = [processes.web(env, name=f"web-{side}", wait=False) for side in "ab"]
    # One fan-out at a time each: while one worker polls, the next tick goes to the other one.
    workers = [processes.worker(env, name=f"worker-{side}", concurrency=1, wait=False) for side in "ab"]
    for web in webs:
        web.wait_http()
    for worker in workers:
        worker.wait_log(WORKER_READY)
    # Due one after another over a period: each tick's fan-out finds a few, on whichever worker.
    with database.connect() as direct:
        for index, cid in enumerate([*PLANS, PAID]):
            offset_s = index * REFRESH_INTERVAL_S / (len(PLANS) + 1)
            direct.execute(
                "UPDATE ladder_connection SET next_refresh_at = now() + make_interval(secs => %s)"
                " WHERE id = %s",
                (offset_s, cid),
            )
    beat = processes.beat(env)
    started = time.monotonic()
    clients = [httpx.Client(base_url=web.url(), headers=AUTH, timeout=30) for web in webs]

    # 1. Refreshes: nobody asks for one (no resolution yet), the beat's fan-out alone polls.
    wait_until(
        lambda: len(readings_by_connection(database)) == len(PLANS) + 1,
        timeout_s=30,
        what="a first reading of every connection",
    )
    compared = stable = 0
    while time.monotonic() - started < REFRESH_RUN_S:
        # Meanwhile: the same state gives the same answer from either process.
        for model in MODELS:
            version = state_version(database)
            answers = [resolution(client, model) for client in clients]
            compared += 1
            if state_version(database) == version:
                stable += 1
                assert answers[0] == answers[1], model
        time.sleep(0.2)
    beat.stop()
    wait_until(
        lambda: (
            database.scalar("SELECT COUNT(*) FROM ladder_connection WHERE claimed_until IS NOT NULL") == 0
        ),
        timeout_s=30,
        what="the last fan-out to finish",
    )
    refreshed = readings_by_connection(database)
    polls = {
        cid: control.count("zai-glm" if cid != PAID else "openrouter", connection=cid) for cid in refreshed
    }
    gaps = {
        cid: min((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False))
        for cid, times in refreshed.items()
        if len(times) > 1
    }
    assert set(refreshed) == {*PLANS, PAID}
    assert all(len(times) >= 2 for times in refreshed.values()), refreshed  # refreshed period after period
    assert min(gaps.values()) >= REFRESH_INTERVAL_S, gaps  # never twice in one period
    assert polls == {cid: len(times) for cid, times in refreshed.items()}  # one reading per poll
    claimed = {worker.name: claims_logged(worker.log_text(tail=1 << 22)) for worker in workers}
    assert all(sum(runs) for runs in claimed.values()), claimed  # both workers polled
    assert sum(sum(runs) for runs in claimed.values()) == sum(polls.values()), claimed  # one claim, one poll
    assert stable >= len(MODELS), (compared, stable)
    processes.check_alive_except(beat)

    # 2. A write through one process is seen by the other at once (its cached snapshot is stale).
    for model in MODELS:
        assert resolution(clients[0], model) == resolution(clients[1], model)
    failure = clients[0].post(
        "/api/v1/connections/plan-00/failures", json={"status": 401, "model": "glm-4.6"}
    )
    assert failure.json()["classification"] == "auth_failed", failure.text
    seen = resolution(clients[1], "auto/subscription")
    assert {"connection_id": "plan-00", "reason": "disabled"}.items() <= next(
        row for row in seen["excluded"] if row["connection_id"] == "plan-00"
    ).items()
    assert seen == resolution(clients[0], "auto/subscription")

    # 3. Spend: reports split across both processes, each replayed once to the other one.
    rng = random.Random(6)
    reports = [
        [
            {
                "request_id": f"r{reporter}-{index}-{event}",
                "connection_id": PAID,
                "model": PAID_MODEL,
                "cost_usd": float(Decimal(rng.randint(1, 5_000_000)) / 1_000_000),
            }
            for event in range(rng.randint(1, 5))
        ]
        for reporter in range(REPORTERS)
        for index in range(REPORTS_EACH)
    ]
    errors: list[str] = []

    def report(which: int, events: list[dict[str, Any]]) -> httpx.Response:
        answer = clients[which].post("/api/v1/usage", json={"events": events})
        if answer.status_code != 200:
            errors.append(f"HTTP {answer.status_code}: {answer.text[:300]}")
        return answer

    def reporter(number: int) -> None:
        mine = reports[number * REPORTS_EACH : (number + 1) * REPORTS_EACH]
        for index, events in enumerate(mine):
            report((number + index) % 2, events)
        for index, events in enumerate(mine):
            report((number + index + 1) % 2, events)  # the replay, through the other process

    threads = [threading.Thread(target=reporter, args=(n,)) for n in range(REPORTERS)]
    # Races: one report sent to both processes at the same moment.
    races: list[list[httpx.Response]] = []
    for race in range(RACES):
        events = [
            {"request_id": f"race-{race}", "connection_id": PAID, "model": PAID_MODEL, "cost_usd": 0.000101}
        ]
        reports.append(events)
        races.append([])
        threads.extend(racers(report, events, races[-1]))
    spend_started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    spend_s = time.monotonic() - spend_started
    assert errors == []
    for raced in races:
        assert [answer.status_code for answer in raced] == [200, 200]
        assert raced[0].json() == raced[1].json()  # the loser answers as the first did
    expected = sum(Decimal(str(event["cost_usd"])) for events in reports for event in events)
    distinct = sum(len(events) for events in reports)
    assert database.scalar("SELECT COUNT(*) FROM ladder_usageevent") == distinct
    assert Decimal(str(database.scalar("SELECT SUM(cost_usd) FROM ladder_usageevent"))) == expected
    for client in clients:
        spent = client.get("/api/v1/connections").json()["budgets"]["premium"]["spent_usd"]
        assert Decimal(str(spent)) == expected
    processes.check_alive_except(beat)
    counts = [len(times) for times in refreshed.values()]
    print(
        f"FIGURES scale_out refresh_interval_s={REFRESH_INTERVAL_S} run_s={REFRESH_RUN_S:g} "
        f"connections={len(refreshed)} readings_per_connection={min(counts)}..{max(counts)} "
        f"min_gap_s={min(gaps.values()):.2f} polls={sum(polls.values())} readings={sum(counts)} "
        f"claimed_by_worker={ {name: sum(runs) for name, runs in claimed.items()} } "
        f"resolution_pairs={compared} stable_pairs_equal={stable} "
        f"usage_requests={2 * REPORTERS * REPORTS_EACH + 2 * RACES} "
        f"distinct_events={distinct} spend_usd={expected} spend_phase_s={spend_s:.2f}"
    )
