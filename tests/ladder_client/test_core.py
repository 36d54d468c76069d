"""The rules both clients follow (ladder_client.core): which failed sends are retried, how an error
answer or a transport failure is named, the resolution cache, the options, shown through
LadderClient against scripted sockets, a refused port and the running ladder."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest

from ladder_client import LadderClient, LadderError, UsageEvent
from tests.ladder_client.conftest import CANDIDATES, CHEAP, PLAN, CountingTransport, Ladder, claude_headers
from tests.ladder_client.sockets import http_answer, refused_url, scripted_server, silent_server


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- retries and errors ---------------------------------------------------------------------


def test_it_retries_a_refused_connection_then_gives_up() -> None:
    transport = CountingTransport()
    client = LadderClient(
        refused_url(), "olr_whatever-token", retries=2, retry_backoff_s=0, transport=transport
    )

    with pytest.raises(LadderError) as raised:
        client.resolve("auto/thrifty")

    assert (raised.value.status, raised.value.code, raised.value.attempts) == (None, "connection_failed", 3)
    assert transport.sent == ["POST /api/v1/pools/resolve"] * 3


def test_it_retries_even_a_failure_report_when_the_connection_was_refused() -> None:
    # A refused connection never carried the report: sending it again cannot count it twice.
    transport = CountingTransport()
    client = LadderClient(
        refused_url(), "olr_whatever-token", retries=1, retry_backoff_s=0, transport=transport
    )

    with pytest.raises(LadderError) as raised:
        client.report_failure(PLAN, 429)

    assert raised.value.attempts == 2
    assert len(transport.sent) == 2


def test_it_raises_a_timeout_without_retrying() -> None:
    transport = CountingTransport()
    with silent_server() as url:
        client = LadderClient(url, "olr_whatever-token", timeout_s=0.3, retries=3, transport=transport)
        with pytest.raises(LadderError) as raised:
            client.resolve("auto/thrifty")

    assert (raised.value.status, raised.value.code, raised.value.attempts) == (None, "timeout", 1)
    assert len(transport.sent) == 1


def test_it_retries_a_dropped_connection_only_when_resending_is_safe() -> None:
    with scripted_server(None) as server:
        client = LadderClient(server.url, "olr_whatever-token", retries=2, retry_backoff_s=0)
        with pytest.raises(LadderError) as resolve_error:
            client.resolve("auto/thrifty")
        with pytest.raises(LadderError) as usage_error:
            client.report_usage(UsageEvent(request_id="r", connection_id=CHEAP, model="m"))
        resolves_and_usage = len(server.connections)
        with pytest.raises(LadderError) as failure_error:
            client.report_failure(PLAN, 429)

    assert (resolve_error.value.code, resolve_error.value.attempts) == ("connection_lost", 3)
    assert usage_error.value.attempts == 3  # usage carries its request_id: a resend is not a recount
    assert resolves_and_usage == 6
    # The failure report reached the ladder: a resend would raise its backoff twice.
    assert (failure_error.value.code, failure_error.value.attempts) == ("connection_lost", 1)
    assert len(server.connections) == 7


def test_it_never_retries_an_http_answer() -> None:
    body = json.dumps({"error": {"code": "database_unavailable", "message": "retry shortly", "field": None}})
    answer = http_answer(
        "503 Service Unavailable", body.encode(), {"Content-Type": "application/json", "Retry-After": "5"}
    )
    with scripted_server(answer) as server:
        client = LadderClient(server.url, "olr_whatever-token", retries=3, retry_backoff_s=0)
        with pytest.raises(LadderError) as raised:
            client.resolve("auto/thrifty")

    assert (raised.value.status, raised.value.code, raised.value.field) == (503, "database_unavailable", None)
    assert raised.value.retry_after_s == 5.0
    assert (raised.value.attempts, len(server.connections)) == (1, 1)


def test_it_reads_a_retry_after_date_and_an_answer_in_another_shape() -> None:
    when = (datetime.now(UTC) + timedelta(seconds=120)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    answer = http_answer("502 Bad Gateway", b"<html>bad gateway</html>", {"Retry-After": when})
    with scripted_server(answer) as server:
        client = LadderClient(server.url, "olr_whatever-token")
        with pytest.raises(LadderError) as raised:
            client.connections()

    assert (raised.value.status, raised.value.code) == (502, "unexpected_response")
    assert "bad gateway" in raised.value.message
    assert raised.value.retry_after_s is not None
    assert 100 < raised.value.retry_after_s <= 120


def test_it_sends_the_token_and_json() -> None:
    answer = http_answer("200 OK", b'{"object": "list", "data": []}', {"Content-Type": "application/json"})
    with scripted_server(answer) as server:
        LadderClient(server.url, "olr_the-token-value").models()

    (request,) = server.connections
    head = request.decode("latin-1").split("\r\n")
    assert head[0] == "GET /v1/models HTTP/1.1"
    assert "authorization: Bearer olr_the-token-value" in [
        line.lower().replace("bearer", "Bearer") for line in head
    ]


# --- the resolution cache ---------------------------------------------------------------------


def test_it_serves_a_cached_resolution_until_the_ttl_passes(ladder: Ladder) -> None:
    clock, transport = FakeClock(), CountingTransport()
    with ladder.client(cache_ttl_s=2.0, clock=clock, transport=transport) as client:
        first = client.resolve("auto/thrifty", CANDIDATES)
        clock.now += 1.9
        hit = client.resolve("auto/thrifty", list(CANDIDATES))  # equal candidates, another list
        other = client.resolve("auto/thrifty", CANDIDATES[1:])  # other candidates: their own entry
        clock.now += 0.2
        expired = client.resolve("auto/thrifty", CANDIDATES)

    assert hit is first
    assert other is not first
    assert expired is not first
    assert expired.resolved_at >= first.resolved_at
    assert len(transport.sent) == 3


def test_it_asks_every_time_when_the_cache_is_off(ladder: Ladder) -> None:
    transport = CountingTransport()
    with ladder.client(transport=transport) as client:
        client.resolve("auto/thrifty")
        client.resolve("auto/thrifty")

    assert len(transport.sent) == 2
    assert len(client.cache) == 0


def test_it_forgets_cached_resolutions_after_a_failure_report(ladder: Ladder) -> None:
    reset_at = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=30)
    with ladder.client(cache_ttl_s=60.0) as client:
        before = client.resolve("auto/thrifty", CANDIDATES)
        client.report_failure(
            PLAN, 429, headers=claude_headers(utilization=1.0, reset_at=reset_at, status="rejected")
        )
        after = client.resolve("auto/thrifty", CANDIDATES)

    assert [e.rung for e in before.pool] == ["subscription", "cheap"]
    assert [e.rung for e in after.pool] == ["cheap"]


def test_it_keeps_the_cache_consistent_across_threads(ladder: Ladder) -> None:
    transport = CountingTransport()
    errors: list[BaseException] = []
    with ladder.client(cache_ttl_s=60.0, transport=transport) as client:
        first = client.resolve("auto/thrifty", CANDIDATES)

        def resolve_many() -> None:
            try:
                for _ in range(200):
                    assert client.resolve("auto/thrifty", CANDIDATES) is first
            except BaseException as exc:  # reported below, on the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=resolve_many) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert errors == []
    assert len(transport.sent) == 1


def test_it_refuses_nonsense_options() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        LadderClient("http://127.0.0.1:1", "olr_whatever-token", timeout_s=0)
    with pytest.raises(ValueError, match="retries"):
        LadderClient("http://127.0.0.1:1", "olr_whatever-token", retries=-1)
    with pytest.raises(ValueError, match="cache_ttl_s"):
        LadderClient("http://127.0.0.1:1", "olr_whatever-token", cache_ttl_s=-1.0)
