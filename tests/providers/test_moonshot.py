from __future__ import annotations

import httpx
import pytest

from ladder.providers import FetchError
from ladder.providers.moonshot import MoonshotApiAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("moonshot-api")
BALANCE = "/v1/users/me/balance"
adapter = MoonshotApiAdapter()


def test_it_reads_the_balance_as_a_windowless_reading(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "moonshot"), client, NOW)

    assert (reading.verifiable, reading.windows, reading.source) == (True, (), "poll")
    assert "49.58" in reading.note
    assert upstream.calls_to(BALANCE)[0].headers["authorization"] == "Bearer <credential>"


def test_it_gives_an_unverifiable_reading_without_a_balance(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.serve("GET", BALANCE, Route(body={"code": 0, "data": {"balance": 1}}))

    reading = adapter.fetch(connection_for(upstream, "moonshot"), client, NOW)

    assert not reading.verifiable


def test_it_raises_an_error_code_inside_a_200(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.serve(
        "GET", BALANCE, Route(body={"code": 5, "error": {"type": "server_error", "message": "oops"}})
    )

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, "moonshot"), client, NOW)

    assert raised.value.status == 200


def test_it_classifies_an_exhausted_balance() -> None:
    body = {"error": {"type": "exceeded_current_quota_error", "message": "Your account is suspended"}}

    assert adapter.classify_failure(429, {}, body, NOW).classification == "quota_exhausted"
