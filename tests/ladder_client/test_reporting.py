"""The reporter's batching, coalescing and ordering, and its client per event loop, against an
in-process ladder answer (httpx.MockTransport) and a clock the test moves."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from ladder_client import UsageEvent
from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.reporting import LadderReporter, PerLoop, utilisation

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
UNIFIED = "anthropic-ratelimit-unified-5h-"


class FakeLadder:
    """Records every call; answers like the ladder (usage status configurable)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.usage_status = 200

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.calls.append((request.url.path, body))
        if request.url.path == "/api/v1/usage":
            if self.usage_status != 200:
                error = {"error": {"code": "unavailable", "message": "down", "field": None}}
                return httpx.Response(self.usage_status, json=error)
            return httpx.Response(200, json={"events": [], "budgets": {}})
        if request.url.path.endswith("/observations"):
            return httpx.Response(200, json={"reading": None})
        if request.url.path.endswith("/failures"):
            return httpx.Response(200, json=failure_answer())
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "no", "field": None}})

    def paths(self) -> list[str]:
        return [path for path, _ in self.calls]


def failure_answer() -> dict[str, Any]:
    return {"classification": "quota_exhausted", "cooldown_until": None, "reset_at": None, "window": "5h"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reporter_for(ladder: FakeLadder, clock: Clock | None = None, **options: Any) -> LadderReporter:
    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(ladder), retries=0)
    return LadderReporter(client, clock=clock or Clock(), flush_interval_s=60, **options)


def event(n: int) -> UsageEvent:
    return UsageEvent(request_id=f"litellm:{n}", connection_id="plan", model="m", occurred_at=NOW)


def headers(used: str, remaining: str = "10") -> dict[str, str]:
    return {f"{UNIFIED}utilization": used, "x-ratelimit-remaining-requests": remaining}


def test_usage_leaves_in_batches_of_at_most_batch_max() -> None:
    ladder = FakeLadder()
    reporter = reporter_for(ladder, batch_max=2)

    async def run() -> None:
        for n in range(5):
            reporter.offer_usage(event(n))
        await reporter.aclose()

    asyncio.run(run())
    sizes = [len(body["events"]) for path, body in ladder.calls if path == "/api/v1/usage"]
    assert sorted(sizes, reverse=True) == [2, 2, 1]
    assert (reporter.sent, reporter.dropped) == (5, 0)


def test_a_batch_that_failed_is_kept_for_the_next_flush() -> None:
    ladder = FakeLadder()
    ladder.usage_status = 503
    reporter = reporter_for(ladder)

    async def run() -> None:
        reporter.offer_usage(event(1))
        await reporter.flush()
        assert (reporter.queue_length, reporter.failed_batches) == (1, 1)
        ladder.usage_status = 200
        await reporter.flush()

    asyncio.run(run())
    assert (reporter.queue_length, reporter.sent) == (0, 1)
    bodies = [body for path, body in ladder.calls if path == "/api/v1/usage"]
    assert bodies[0] == bodies[1]  # the same request ids again: the ladder counts them once


def test_a_batch_the_ladder_refuses_is_dropped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    ladder = FakeLadder()
    ladder.usage_status = 400
    reporter = reporter_for(ladder)

    async def run() -> None:
        reporter.offer_usage(event(1))
        with caplog.at_level(logging.WARNING, logger="ladder_client.reporting"):
            await reporter.flush()

    asyncio.run(run())
    assert (reporter.queue_length, reporter.rejected) == (0, 1)
    assert any("refused 1 usage events" in record.getMessage() for record in caplog.records)


def test_one_refused_event_does_not_drop_the_rest_of_its_batch() -> None:
    """The ladder refuses a whole batch for one bad event (a 422 naming it, ``events[3].cost_usd``):
    the others are still recorded, in one more call, and only the bad one is counted as rejected."""
    recorded: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        events = json.loads(request.content)["events"]
        ids = [e["request_id"] for e in events]
        if "litellm:3" in ids:
            field = f"events[{ids.index('litellm:3')}].cost_usd"
            error = {"error": {"code": "cost_too_large", "message": "too high", "field": field}}
            return httpx.Response(422, json=error)
        recorded.extend(ids)
        return httpx.Response(200, json={"events": [], "budgets": {}})

    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(answer), retries=0)
    reporter = LadderReporter(client, clock=Clock(), flush_interval_s=60, batch_max=8)

    async def run() -> None:
        for n in range(8):
            reporter.offer_usage(event(n))
        await reporter.aclose()

    asyncio.run(run())
    assert recorded == [f"litellm:{n}" for n in range(8) if n != 3]
    assert (reporter.sent, reporter.rejected, reporter.queue_length) == (7, 1, 0)


def test_at_exit_one_refused_event_does_not_drop_the_rest() -> None:
    recorded: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        ids = [e["request_id"] for e in json.loads(request.content)["events"]]
        if "litellm:1" in ids:
            field = f"events[{ids.index('litellm:1')}].model"
            error = {"error": {"code": "invalid_event", "message": "not in the catalog", "field": field}}
            return httpx.Response(422, json=error)
        recorded.extend(ids)
        return httpx.Response(200, json={"events": [], "budgets": {}})

    reporter = reporter_for(FakeLadder(), batch_max=3)
    for n in range(5):
        reporter.offer_usage(event(n))
    with LadderClient("http://ladder", "t", transport=httpx.MockTransport(answer), retries=0) as client:
        assert reporter.drain_sync(client) == 4
    assert recorded == ["litellm:0", "litellm:2", "litellm:3", "litellm:4"]
    assert (reporter.rejected, reporter.dropped, reporter.queue_length) == (1, 0, 0)


def test_quota_headers_are_coalesced_per_connection() -> None:
    ladder = FakeLadder()
    clock = Clock()
    reporter = reporter_for(ladder, clock)

    async def run() -> None:
        reporter.offer_headers("plan", headers("0.4", "10"), NOW)
        await reporter.flush()  # the first reading of a connection: sent at once
        reporter.offer_headers("plan", headers("0.4", "9"), NOW + timedelta(seconds=0.1))
        reporter.offer_headers("plan", headers("0.4", "8"), NOW + timedelta(seconds=0.2))
        clock.now = 0.5
        await reporter.flush()  # same utilisation, within the second: held
        clock.now = 1.0
        await reporter.flush()  # a second later: the newest only
        reporter.offer_headers("plan", headers("0.5", "7"), NOW + timedelta(seconds=0.3))
        clock.now = 1.1
        await reporter.flush()  # the utilisation changed: at once

    asyncio.run(run())
    sent = [body["headers"]["x-ratelimit-remaining-requests"] for _, body in ladder.calls]
    assert sent == ["10", "8", "7"]
    assert reporter.observations_coalesced == 1


def test_headers_older_than_a_reported_failure_are_never_sent() -> None:
    ladder = FakeLadder()
    reporter = reporter_for(ladder)

    async def run() -> None:
        reporter.offer_headers("plan", headers("0.4"), NOW - timedelta(seconds=1))
        await reporter.report_failure(
            "plan", 429, headers=headers("1.0"), body={"error": "spent"}, model="m", observed_at=NOW
        )
        reporter.offer_headers("plan", headers("0.3"), NOW - timedelta(seconds=2))  # arrives late
        await reporter.aclose()

    asyncio.run(run())
    assert ladder.paths() == ["/api/v1/connections/plan/failures"]
    assert reporter.failures_sent == 1


def test_an_idle_reporter_keeps_no_task_and_flushes_on_its_interval() -> None:
    ladder = FakeLadder()
    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(ladder))
    reporter = LadderReporter(client, flush_interval_s=0.05)

    async def run() -> None:
        reporter.offer_usage(event(1))
        for _ in range(100):
            if reporter.sent:
                break
            await asyncio.sleep(0.02)
        for _ in range(100):  # the flusher ends once nothing is left
            task = reporter._flusher
            if task is None or task.done():
                break
            await asyncio.sleep(0.02)
        assert reporter._flusher is not None
        assert reporter._flusher.done()
        await client.aclose()

    asyncio.run(run())
    assert reporter.sent == 1


def test_utilisation_reads_only_the_headers_that_say_how_much_is_used() -> None:
    assert utilisation({"X-Codex-Primary-Used-Percent": "40", "x-ratelimit-remaining-requests": "9"}) == (
        ("x-codex-primary-used-percent", "40"),
    )


def test_events_queued_on_a_loop_that_ended_go_out_with_the_next_loops_reporter() -> None:
    ladder = FakeLadder()
    loops = PerLoop(
        lambda: AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(ladder)),
        reporter_options={"flush_interval_s": 60},
    )

    async def queue(n: int) -> None:
        loops.reporter.offer_usage(event(n))

    async def close() -> None:
        await loops.aclose()

    asyncio.run(queue(1))  # its loop ends before any flush
    asyncio.run(queue(2))
    asyncio.run(close())
    sent = [e["request_id"] for path, body in ladder.calls if path == "/api/v1/usage" for e in body["events"]]
    assert sent == ["litellm:1", "litellm:2"]
