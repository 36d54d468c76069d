"""The one HTTP path of every poll: base URLs, timeouts, capped bodies, typed failures."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest

from ladder.providers import ADAPTERS, DEFAULT_TIMEOUT, ConnectionRef, FetchError
from ladder.providers.base import MAX_BODY_BYTES, resolve_base_url
from ladder.providers.claude import ClaudeOAuthAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

USAGE = "/api/oauth/usage"


@pytest.fixture
def claude(upstream: FakeUpstream) -> ConnectionRef:
    upstream.replay(load_fixture("claude-oauth"))
    return connection_for(upstream, "claude")


def test_it_prefers_the_connection_base_url_then_the_override_then_the_default() -> None:
    assert resolve_base_url("http://conn/", "http://settings", "https://default") == "http://conn"
    assert resolve_base_url(None, "http://settings/", "https://default") == "http://settings"
    assert resolve_base_url("  ", None, "https://default") == "https://default"
    assert resolve_base_url(None, None, None) is None


def test_it_uses_the_settings_override_when_the_connection_has_no_base_url(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef
) -> None:
    reading = ClaudeOAuthAdapter().fetch(
        replace(claude, base_url=None), client, NOW, base_url_override=upstream.base_url
    )

    assert reading.verifiable
    assert len(upstream.calls_to(USAGE)) == 1


def test_it_keeps_a_path_prefix_of_the_base_url(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.serve_response(
        "GET", "/proxy/claude" + USAGE, load_fixture("claude-oauth")["calls"]["usage"]["response"]
    )
    connection = ConnectionRef(
        "c1", "claude", "oauth", "<token>", base_url=upstream.base_url + "/proxy/claude/"
    )

    assert ClaudeOAuthAdapter().fetch(connection, client, NOW).verifiable


def test_it_raises_a_transient_upstream_error_on_a_timeout(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef
) -> None:
    upstream.serve("GET", USAGE, Route(body={}, delay_s=1.0))
    adapter = ClaudeOAuthAdapter(timeout=httpx.Timeout(0.2, connect=0.2))

    with pytest.raises(FetchError) as raised:
        adapter.fetch(claude, client, NOW)

    assert raised.value.failure.classification == "upstream_error"
    assert raised.value.transient
    assert "timeout" in raised.value.failure.detail


def test_it_sets_its_own_timeouts_whatever_the_client_default(
    upstream: FakeUpstream, claude: ConnectionRef
) -> None:
    upstream.serve("GET", USAGE, Route(body={}, delay_s=1.0))
    adapter = ClaudeOAuthAdapter(timeout=httpx.Timeout(0.2))

    with httpx.Client(timeout=None) as patient_client, pytest.raises(FetchError):
        adapter.fetch(claude, patient_client, NOW)
    assert DEFAULT_TIMEOUT.connect == 3.0
    assert DEFAULT_TIMEOUT.read == 10.0


def test_it_raises_a_transient_upstream_error_on_a_connection_reset(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef
) -> None:
    upstream.serve("GET", USAGE, Route(reset_connection=True))

    with pytest.raises(FetchError) as raised:
        ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert (raised.value.failure.classification, raised.value.transient) == ("upstream_error", True)
    assert raised.value.status is None


def test_it_raises_a_transient_upstream_error_when_nothing_listens(client: httpx.Client) -> None:
    connection = ConnectionRef("c1", "claude", "oauth", "<token>", base_url="http://127.0.0.1:9")

    with pytest.raises(FetchError) as raised:
        ClaudeOAuthAdapter().fetch(connection, client, NOW)

    assert raised.value.transient


@pytest.mark.parametrize("declare_length", [True, False])
def test_it_gives_an_unverifiable_reading_for_an_oversized_body(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef, declare_length: bool
) -> None:
    upstream.serve("GET", USAGE, Route(stream_bytes=10 * MAX_BODY_BYTES, declare_length=declare_length))

    reading = ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert not reading.verifiable
    assert "exceeds" in reading.note
    assert reading.windows == ()


def test_it_honours_a_smaller_body_cap(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef
) -> None:
    reading = ClaudeOAuthAdapter(max_body_bytes=100).fetch(claude, client, NOW)

    assert not reading.verifiable
    assert "exceeds 100 bytes" in reading.note


@pytest.mark.parametrize("raw", [b"{not json", b"", b"<html>maintenance</html>", b"\xff\xfe\x00garbage"])
def test_it_gives_an_unverifiable_reading_for_malformed_json(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef, raw: bytes
) -> None:
    upstream.serve("GET", USAGE, Route(headers={"content-type": "application/json"}, raw=raw))

    reading = ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert not reading.verifiable
    assert "malformed JSON" in reading.note
    assert reading.fetched_at == NOW


@pytest.mark.parametrize("body", [[], "text", 42, None])
def test_it_gives_an_unverifiable_reading_for_json_that_is_not_an_object(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef, body: object
) -> None:
    upstream.serve("GET", USAGE, Route(raw=json.dumps(body).encode()))

    reading = ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert not reading.verifiable
    assert reading.note


@pytest.mark.parametrize(
    ("status", "classification", "transient"),
    [(500, "upstream_error", True), (503, "upstream_error", True), (404, "upstream_error", False)],
)
def test_it_raises_typed_failures_for_http_errors(
    upstream: FakeUpstream,
    client: httpx.Client,
    claude: ConnectionRef,
    status: int,
    classification: str,
    transient: bool,
) -> None:
    upstream.serve("GET", USAGE, Route(status, {"content-type": "text/html"}, raw=b"<html>down</html>"))

    with pytest.raises(FetchError) as raised:
        ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert raised.value.failure.classification == classification
    assert (raised.value.status, raised.value.transient) == (status, transient)


def test_it_does_not_follow_redirects(
    upstream: FakeUpstream, client: httpx.Client, claude: ConnectionRef
) -> None:
    upstream.serve("GET", USAGE, Route(302, {"location": upstream.base_url + "/elsewhere"}))

    with pytest.raises(FetchError) as raised:
        ClaudeOAuthAdapter().fetch(claude, client, NOW)

    assert raised.value.status == 302
    assert upstream.calls_to("/elsewhere") == []


def test_it_answers_unverifiable_without_any_request_for_kinds_that_cannot_poll(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    for adapter in ADAPTERS.values():
        if adapter.supports_poll:
            continue
        reading = adapter.fetch(connection_for(upstream, adapter.provider), client, NOW)
        assert not reading.verifiable, adapter.kind
        assert "no quota endpoint" in reading.note
    assert upstream.requests == []
