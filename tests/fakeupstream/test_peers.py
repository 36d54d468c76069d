"""The answers other tools captured (``data/quota-peers``) are served like the fixtures' own error
cases: ``peer:NN-slug`` of their kind, over real HTTP, timed by their own ``now_utc``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl, shift_times
from devtools.fakeupstream.fixtures import DEFAULT_PEERS_DIR, KindFixture

CASES = sorted(DEFAULT_PEERS_DIR.glob("*/*.json"))


def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def read_at(case: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(case["now_utc"].replace("Z", "+00:00"))


def first_call(fixtures: dict[str, KindFixture], kind: str) -> tuple[str, str]:
    call = next(iter(fixtures[kind].calls.values()))
    return call.method, call.path


def assert_served(response: httpx.Response, expected: dict[str, Any]) -> None:
    assert response.status_code == expected["status"]
    for name, value in expected["headers"].items():
        assert response.headers[name] == str(value), name
    if expected["body"] is None:
        assert response.content == b""
    else:
        assert response.json() == expected["body"]


def test_it_lists_every_peer_case_under_its_kind(fixtures: dict[str, KindFixture]) -> None:
    assert len(CASES) >= 60
    for path in CASES:
        assert f"peer:{path.stem}" in fixtures[path.parent.name].cases(), path


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_it_serves_each_peer_case_as_captured_at_its_own_time(
    path: Path, upstream: FakeUpstream, control: FakeUpstreamControl, fixtures: dict[str, KindFixture]
) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    kind = path.parent.name
    control.freeze(read_at(case))
    control.error(kind, f"peer:{path.stem}", connection="c1")
    method, call_path = first_call(fixtures, kind)

    with httpx.Client(base_url=upstream.url_for(kind, "c1")) as client:
        response = client.request(method, call_path)

    assert_served(response, case["response"])
    assert response.headers["x-fake-upstream"] == f"{kind}/error:peer:{path.stem}"


def test_it_moves_a_peer_cases_times_to_now(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    path = DEFAULT_PEERS_DIR / "claude-oauth" / "01-fable-scoped-weekly-limit.json"
    case = json.loads(path.read_text(encoding="utf-8"))
    later = timedelta(days=3, hours=1)
    control.freeze(read_at(case) + later)
    control.error("claude-oauth", "peer:01-fable-scoped-weekly-limit", call="usage")

    body = httpx.get(upstream.url_for("claude-oauth") + "/api/oauth/usage").json()

    assert body == shift_times(case["response"], later, read_at(case))["body"]
    reset = datetime.fromisoformat(body["five_hour"]["resets_at"])
    assert reset - datetime.fromisoformat(case["response"]["body"]["five_hour"]["resets_at"]) == later
