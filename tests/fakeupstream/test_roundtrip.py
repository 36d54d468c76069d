from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, shift_times
from devtools.fakeupstream.fixtures import DEFAULT_FIXTURES_DIR
from tests.fakeupstream.conftest import FIXTURE_TIME

DELTA = timedelta(days=37, hours=5, minutes=3, seconds=7)


def _calls() -> list[tuple[str, str, dict[str, Any]]]:
    calls = []
    for path in sorted(DEFAULT_FIXTURES_DIR.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        for name, call in raw["calls"].items():
            calls.append((raw["provider"], name, call))
    return calls


CALLS = _calls()


@pytest.fixture(scope="module")
def shifted_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(freeze_at=FIXTURE_TIME + DELTA) as running:
        yield running


def _send(client: httpx.Client, call: dict[str, Any]) -> httpx.Response:
    request = call["request"]
    url = urlsplit(request["url"])
    target = url.path + (f"?{url.query}" if url.query else "")
    body = request.get("body")
    return client.request(
        request["method"],
        target,
        headers=request.get("headers") or {},
        content=json.dumps(body).encode() if body is not None else None,
    )


def _assert_served(response: httpx.Response, expected: Any) -> None:
    assert response.status_code == expected["status"]
    for name, value in expected["headers"].items():
        assert response.headers[name] == value, name
    if expected["body"] is None:
        assert response.content == b""
    else:
        assert response.json() == expected["body"]


def test_it_covers_every_call_of_every_kind() -> None:
    kinds = {kind for kind, _, _ in CALLS}
    assert len(CALLS) == 29
    assert len(kinds) == 17  # qwen-oauth has no call


@pytest.mark.parametrize(("kind", "name", "call"), CALLS, ids=[f"{k}:{n}" for k, n, _ in CALLS])
def test_it_replays_every_call_shifted_to_now(
    shifted_upstream: FakeUpstream, kind: str, name: str, call: dict[str, Any]
) -> None:
    expected = shift_times(call["response"], DELTA, FIXTURE_TIME)
    with httpx.Client(base_url=shifted_upstream.url_for(kind)) as client:
        response = _send(client, call)
    _assert_served(response, expected)
    assert response.headers["x-fake-upstream"] == f"{kind}/{name}"


@pytest.mark.parametrize(("kind", "name", "call"), CALLS, ids=[f"{k}:{n}" for k, n, _ in CALLS])
def test_it_replays_every_call_in_a_connection_namespace(
    shifted_upstream: FakeUpstream, kind: str, name: str, call: dict[str, Any]
) -> None:
    expected = shift_times(call["response"], DELTA, FIXTURE_TIME)
    with httpx.Client(base_url=shifted_upstream.url_for(kind, "conn 7/β")) as client:
        response = _send(client, call)
    _assert_served(response, expected)


@pytest.mark.parametrize(("kind", "name", "call"), CALLS, ids=[f"{k}:{n}" for k, n, _ in CALLS])
def test_it_replays_the_fixture_as_is_at_the_fixture_time(
    upstream: FakeUpstream, kind: str, name: str, call: dict[str, Any]
) -> None:
    with httpx.Client(base_url=upstream.url_for(kind)) as client:
        response = _send(client, call)
    _assert_served(response, call["response"])


def test_it_dates_replies_by_its_clock(shifted_upstream: FakeUpstream) -> None:
    response = httpx.get(shifted_upstream.url_for("groq") + "/openai/v1/chat/completions")
    assert response.status_code == 405
    assert parsedate_to_datetime(response.headers["date"]) == FIXTURE_TIME + DELTA


def test_it_follows_the_real_clock_by_default() -> None:
    with FakeUpstream() as running:
        body = httpx.get(running.url_for("claude-oauth") + "/api/oauth/usage").json()
        now = running.app.clock.now()
    # the fixture's five-hour window resets two hours after the fixture time
    ahead = datetime.fromisoformat(body["five_hour"]["resets_at"]) - now
    assert timedelta(hours=1, minutes=59) < ahead <= timedelta(hours=2, seconds=1)


def test_it_answers_404_for_an_unknown_kind_or_path_and_405_for_a_wrong_method(
    upstream: FakeUpstream,
) -> None:
    with httpx.Client(base_url=upstream.url) as client:
        unknown_kind = client.get("/nope/api/oauth/usage")
        unknown_path = client.get("/claude-oauth/api/oauth/nope")
        wrong_method = client.post("/claude-oauth/api/oauth/usage")
    assert unknown_kind.status_code == 404
    assert "claude-oauth" in unknown_kind.json()["kinds"]
    assert unknown_path.status_code == 404
    assert unknown_path.json()["calls"]["usage"] == "GET /api/oauth/usage"
    assert wrong_method.status_code == 405


def test_it_serves_kiro_at_the_root_of_its_base_url(upstream: FakeUpstream) -> None:
    with httpx.Client(base_url=upstream.url_for("kiro")) as client:
        assert client.post("/").status_code == 200
        assert client.post("").status_code == 200


def test_it_lists_the_kinds_at_the_root(upstream: FakeUpstream) -> None:
    index = httpx.get(upstream.url + "/").json()
    assert index["kinds"]["copilot"]["seat_token_exchange"] == "GET /copilot_internal/v2/token"
    assert len(index["kinds"]) == 18
