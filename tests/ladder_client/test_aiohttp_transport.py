"""AsyncLadderClient over the aiohttp transport (the proxy hook's): the same answers as over httpx's,
one keep-alive connection for many calls, and the same resend rules when the network misbehaves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ladder_client import Candidate, LadderError, UsageEvent
from ladder_client.aclient import AsyncLadderClient
from ladder_client.aiohttp_transport import aiohttp_transport
from tests.ladder_client.conftest import CHEAP, CHEAP_MODEL, PLAN, PLAN_MODEL, Ladder
from tests.ladder_client.sockets import http_answer, refused_url, scripted_server, silent_server

CANDIDATES = (
    Candidate(*PLAN_MODEL, connection_id=None, allowed_connection_ids=(PLAN,)),
    Candidate(*CHEAP_MODEL, connection_id=None, allowed_connection_ids=(CHEAP,)),
)


def client_of(url: str, token: str = "olr_whatever-token", **options: Any) -> AsyncLadderClient:
    return AsyncLadderClient(url, token, transport=aiohttp_transport(4), **options)


def test_it_answers_as_the_httpx_transport_does_over_one_kept_connection(ladder: Ladder) -> None:
    async def run() -> tuple[Any, Any, Any, int]:
        async with client_of(ladder.url, ladder.token) as client:
            over_aiohttp = [await client.resolve("auto/thrifty", CANDIDATES) for _ in range(5)]
            plan = await client.connection(PLAN)
            transport = client._http._transport
            session = transport.client  # type: ignore[attr-defined]
            kept = len(session.connector._conns) if session.connector else 0
        async with AsyncLadderClient(ladder.url, ladder.token) as plain:
            over_httpx = await plain.resolve("auto/thrifty", CANDIDATES)
        return over_aiohttp, plan, over_httpx, kept

    over_aiohttp, plan, over_httpx, kept = asyncio.run(run())
    assert {resolution.pool for resolution in over_aiohttp} == {over_httpx.pool}
    assert plan.id == PLAN
    assert kept == 1  # six calls, one connection kept alive (the pool keyed by host)


def test_a_refused_connection_is_retried_then_named() -> None:
    client = client_of(refused_url(), retries=2, retry_backoff_s=0)

    async def run() -> None:
        try:
            await client.resolve("auto/thrifty")
        finally:
            await client.aclose()

    with pytest.raises(LadderError) as raised:
        asyncio.run(run())
    assert (raised.value.code, raised.value.attempts) == ("connection_failed", 3)


def test_a_dropped_connection_is_resent_only_when_resending_is_safe() -> None:
    """httpx-aiohttp reads a peer hanging up after the request as a connect timeout (resent for any
    call): a failure report would reach the ladder twice. It is resent only for idempotent calls."""

    async def run(url: str) -> tuple[LadderError, LadderError]:
        async with client_of(url, retries=2, retry_backoff_s=0) as client:
            with pytest.raises(LadderError) as usage_error:
                await client.report_usage(UsageEvent(request_id="r", connection_id=CHEAP, model="m"))
            with pytest.raises(LadderError) as failure_error:
                await client.report_failure(PLAN, 429)
        return usage_error.value, failure_error.value

    with scripted_server(None) as server:
        usage_error, failure_error = asyncio.run(run(server.url))
        sent = [request.split(b" ", 2)[1] for request in server.connections]

    assert (usage_error.code, usage_error.attempts) == ("connection_lost", 3)
    assert (failure_error.code, failure_error.attempts) == ("connection_lost", 1)
    assert sent == [b"/api/v1/usage"] * 3 + [f"/api/v1/connections/{PLAN}/failures".encode()]


def test_a_read_timeout_is_not_resent() -> None:
    async def run(url: str) -> LadderError:
        async with client_of(url, timeout_s=0.3, retries=3, retry_backoff_s=0) as client:
            with pytest.raises(LadderError) as raised:
                await client.resolve("auto/thrifty")
        return raised.value

    with silent_server() as url:
        error = asyncio.run(run(url))
    assert (error.code, error.attempts) == ("timeout", 1)


def test_an_answer_aiohttp_cannot_parse_is_a_ladder_error() -> None:
    """A header over aiohttp's 8 KiB limit: a LadderError naming it, never a bare aiohttp error (the
    reporter catches LadderError only, and would lose the batch)."""
    answer = http_answer("200 OK", b"{}", {"X-Huge": "x" * 9000})

    async def run(url: str) -> LadderError:
        async with client_of(url, retries=2, retry_backoff_s=0) as client:
            with pytest.raises(LadderError) as raised:
                await client.report_failure(PLAN, 429)
        return raised.value

    with scripted_server(answer) as server:
        error = asyncio.run(run(server.url))
        sent = len(server.connections)
    assert (error.code, error.attempts, sent) == ("connection_lost", 1, 1)
