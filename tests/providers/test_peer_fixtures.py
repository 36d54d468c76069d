"""Upstream answers captured by other tools (``devtools/fakeupstream/data/quota-peers``), replayed over HTTP.

Each case says what it means and what the adapter must read from it: a failure classification, a
reading from the usage endpoint, or a reading of passive headers. Only the keys a case's ``expect``
names are checked, so that a case states what its source established and nothing more.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.fakeupstream.fixtures import DEFAULT_PEERS_DIR
from ladder.domain.types import Failure, Reading
from ladder.providers import FetchError
from ladder.providers.registry import ADAPTERS
from tests.providers.conftest import FakeUpstream, Route, connection_for, roundtrip_case

# The usage call of each kind that polls: (method, path, connection params that skip discovery).
POLL_CALLS: dict[str, tuple[str, str, dict[str, str]]] = {
    "claude-oauth": ("GET", "/api/oauth/usage", {}),
    "codex-chatgpt": ("GET", "/backend-api/wham/usage", {}),
    "copilot": ("GET", "/copilot_internal/user", {}),
    "gemini-cli": ("POST", "/v1internal:retrieveUserQuota", {"project": "p"}),
    "antigravity": ("POST", "/v1internal:fetchAvailableModels", {"project": "p"}),
    "kimi-coding": ("GET", "/coding/v1/usages", {}),
    "minimax-coding": ("GET", "/v1/api/openplatform/coding_plan/remains", {}),
    "openrouter": ("GET", "/api/v1/key", {}),
    "zai-glm": ("GET", "/api/monitor/usage/quota/limit", {}),
}
CASES = sorted(DEFAULT_PEERS_DIR.glob("*/*.json"))


def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def check_failure(failure: Failure, expect: dict[str, Any]) -> None:
    assert failure.classification == expect["classification"], failure.detail
    if "window" in expect:
        assert failure.window == expect["window"]
    if "reset_at" in expect:
        assert failure.reset_at == when(expect["reset_at"])
    if "retry_after_s" in expect:
        wanted = expect["retry_after_s"]
        assert failure.retry_after_s == (None if wanted is None else pytest.approx(wanted, abs=0.01))


def check_reading(reading: Reading, expect: dict[str, Any]) -> None:
    assert reading.verifiable == expect["verifiable"], reading.note
    if "windows" not in expect:
        return
    got = {w.name: w for w in reading.windows}
    assert sorted(got) == sorted(w["name"] for w in expect["windows"])
    for wanted in expect["windows"]:
        window = got[wanted["name"]]
        assert window.remaining_pct == pytest.approx(wanted["remaining_pct"], abs=0.01)
        if "reset_at" in wanted:
            assert window.reset_at == when(wanted["reset_at"])


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def test_it_has_cited_cases_of_many_kinds() -> None:
    kinds = {path.parent.name for path in CASES}

    assert len(CASES) >= 60
    assert len(kinds) >= 8
    for path in CASES:
        case = load(path)
        assert case["source"].strip(), path
        assert case["meaning"].strip(), path
        assert path.parent.name in ADAPTERS, path
        assert case["read"] in ("failure", "poll", "headers"), path


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_it_reads_each_peer_answer_as_its_provider_means_it(
    path: Path, upstream: FakeUpstream, client: httpx.Client
) -> None:
    case = load(path)
    kind = path.parent.name
    adapter = ADAPTERS[kind]
    now = when(case["now_utc"])
    assert now is not None
    response, expect = case["response"], case["expect"]

    if case["read"] == "poll":
        method, poll_path, params = POLL_CALLS[kind]
        upstream.serve(
            method, poll_path, Route(response["status"], dict(response["headers"]), response["body"])
        )
        connection = connection_for(upstream, kind, **params)
        if "fetch_error" in expect:
            with pytest.raises(FetchError) as raised:
                adapter.fetch(connection, client, now)
            check_failure(raised.value.failure, expect["fetch_error"])
        else:
            check_reading(adapter.fetch(connection, client, now), expect)
        return

    received = roundtrip_case(upstream, client, response)
    if case["read"] == "headers":
        reading = adapter.read_headers(received.headers, now)
        assert reading is not None
        check_reading(reading, expect)
    else:
        check_failure(
            adapter.classify_failure(received.status_code, received.headers, received.content, now), expect
        )
