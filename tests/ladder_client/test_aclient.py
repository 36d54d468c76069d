"""AsyncLadderClient: the sync client's calls and rules from an event loop, over one keep-alive
pool (against the running ladder, a refused port and an in-process answer)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from ladder_client import Candidate, LadderError
from ladder_client.aclient import AsyncLadderClient
from tests.ladder_client.conftest import CHEAP, CHEAP_MODEL, PLAN, PLAN_MODEL, Ladder
from tests.ladder_client.sockets import refused_url


def candidates() -> list[Candidate]:
    return [
        Candidate(provider=PLAN_MODEL[0], model=PLAN_MODEL[1], allowed_connection_ids=(PLAN,)),
        Candidate(provider=CHEAP_MODEL[0], model=CHEAP_MODEL[1], allowed_connection_ids=(CHEAP,)),
    ]


def test_it_resolves_and_reads_connections_like_the_sync_client(ladder: Ladder) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with AsyncLadderClient(ladder.url, ladder.token) as client:
            resolution = await client.resolve("auto/thrifty", candidates())
            plan = await client.connection(PLAN)
            everything = await client.connections()
            return resolution, plan, everything

    resolution, plan, everything = asyncio.run(run())
    with ladder.client() as sync:
        assert resolution.pool == sync.resolve("auto/thrifty", candidates()).pool
    assert plan.id == PLAN
    assert {connection.id for connection in everything.connections} == {PLAN, CHEAP}


def test_the_resolution_cache_answers_before_any_io() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(
            200,
            json={
                "model": "auto/thrifty",
                "grouping": "tier",
                "category": None,
                "resolved_at": "2026-12-01T12:00:00Z",
                "pool": [],
                "excluded": [],
                "empty": {"code": "no_candidates", "message": "none", "retry_at": None},
                "refresh": [],
            },
        )

    client = AsyncLadderClient("http://ladder", "t", cache_ttl_s=30, transport=httpx.MockTransport(answer))

    async def run() -> None:
        assert client.cached_resolution("auto/thrifty", candidates()) is None
        first = await client.resolve("auto/thrifty", candidates())
        assert client.cached_resolution("auto/thrifty", candidates()) == first
        assert await client.resolve("auto/thrifty", candidates()) == first
        await client.aclose()

    asyncio.run(run())
    assert asked == ["/api/v1/pools/resolve"]


def test_a_refused_connection_is_retried_then_named() -> None:
    client = AsyncLadderClient(refused_url(), "t", retries=2, retry_backoff_s=0)
    with pytest.raises(LadderError) as raised:
        asyncio.run(client.resolve("auto/thrifty"))
    assert (raised.value.code, raised.value.attempts, raised.value.status) == ("connection_failed", 3, None)


def test_an_error_answer_keeps_its_code_and_retry_after() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        body = {"error": {"code": "refresh_in_progress", "message": "busy", "field": None}}
        return httpx.Response(503, json=body, headers={"Retry-After": "2"})

    client = AsyncLadderClient("http://ladder", "t", transport=httpx.MockTransport(answer))
    with pytest.raises(LadderError) as raised:
        asyncio.run(client.credential(PLAN))
    assert (raised.value.status, raised.value.code, raised.value.retry_after_s) == (
        503,
        "refresh_in_progress",
        2.0,
    )
    assert repr(client) == "AsyncLadderClient('http://ladder')"  # never the token
