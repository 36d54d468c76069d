from __future__ import annotations

import http.client
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from tests.fakeupstream.conftest import FIXTURE_TIME

USAGE = "/api/oauth/usage"


def _fetch_all(upstream: FakeUpstream, count: int) -> tuple[list[int], float]:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    with httpx.Client(limits=limits, timeout=30) as client, ThreadPoolExecutor(max_workers=count) as pool:
        started = time.monotonic()
        urls = [upstream.url_for("claude-oauth", f"c{i}") + USAGE for i in range(count)]
        statuses = list(pool.map(lambda url: client.get(url).status_code, urls))
        return statuses, time.monotonic() - started


def test_it_serves_fifty_slow_requests_in_parallel(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    control.slow(200)
    statuses, elapsed_s = _fetch_all(upstream, 50)
    assert statuses == [200] * 50
    assert elapsed_s < 3.0  # serially this would take 10 s


@pytest.mark.slow
def test_it_serves_two_hundred_connections_with_a_100_ms_delay_in_parallel() -> None:
    with FakeUpstream(freeze_at=FIXTURE_TIME, delay_ms=100) as upstream:
        statuses, elapsed_s = _fetch_all(upstream, 200)
        totals = upstream.app.state()["totals"]
    assert statuses == [200] * 200
    assert totals == {"claude-oauth": 200}
    assert elapsed_s < 3.0  # serially this would take 20 s


def test_it_keeps_the_connection_alive_between_requests(upstream: FakeUpstream) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", upstream.port, timeout=5)
    try:
        conn.request("GET", "/claude-oauth" + USAGE)
        first = conn.getresponse()
        first.read()
        sock = conn.sock
        conn.request("POST", "/claude-oauth/v1/messages", body=b'{"model": "x"}')
        second = conn.getresponse()
        second.read()
        assert (first.status, second.status) == (200, 200)
        assert sock is not None
        assert conn.sock is sock  # same socket: the server did not close it
        assert first.getheader("Connection") != "close"
    finally:
        conn.close()


def test_it_reuses_one_httpx_connection_for_sequential_requests(upstream: FakeUpstream) -> None:
    peers = set()
    with httpx.Client(base_url=upstream.url_for("claude-oauth")) as client:
        for _ in range(5):
            response = client.get(USAGE)
            stream = response.extensions["network_stream"]
            peers.add(stream.get_extra_info("client_addr"))
    assert len(peers) == 1


def test_it_stops_while_clients_hold_idle_connections() -> None:
    upstream = FakeUpstream(freeze_at=FIXTURE_TIME).start()
    client = httpx.Client(base_url=upstream.url_for("claude-oauth"))
    try:
        assert client.get(USAGE).status_code == 200
        started = time.monotonic()
        upstream.stop()
        assert time.monotonic() - started < 2.0
        with pytest.raises(httpx.TransportError):
            client.get(USAGE)
    finally:
        client.close()
