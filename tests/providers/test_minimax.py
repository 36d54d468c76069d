from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers import FetchError
from ladder.providers.minimax import MiniMaxAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("minimax-coding")
USAGE = "/v1/api/openplatform/coding_plan/remains"
AT_14 = datetime(2026, 9, 1, 14, 0, tzinfo=UTC)
WEEK_RESET = datetime(2026, 9, 5, 9, 0, tzinfo=UTC)
adapter = MiniMaxAdapter()


def remains_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["coding_plan_remains"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "minimax"), client, NOW)


def test_it_reads_the_interval_and_weekly_windows(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "minimax"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (Window("5h", 70.0, AT_14), Window("7d", 88.0, WEEK_RESET))


def test_it_reads_usage_count_as_the_remaining_count(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = remains_body()
    entry = body["data"]["model_remains"][0]
    del entry["current_interval_remaining_percent"], entry["current_weekly_remaining_percent"]

    reading = fetch_body(upstream, client, body)

    # 3150 of 4500 and 39600 of 45000 *remaining*: 70 % and 88 %, not 30 % and 12 %.
    assert [w.remaining_pct for w in reading.windows] == [70.0, 88.0]


def test_it_falls_back_to_the_relative_reset_in_ms(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = remains_body()
    del body["data"]["model_remains"][0]["end_time"]

    assert fetch_body(upstream, client, body).windows[0].reset_at == AT_14


def test_it_reads_a_string_percentage_and_a_top_level_list(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = remains_body()
    entries = body["data"].pop("model_remains")
    entries[0]["current_interval_remaining_percent"] = "12.5"
    body["model_remains"] = entries

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == 12.5


def test_it_gates_on_the_lowest_text_model_and_ignores_media_models(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = remains_body()
    entries = body["data"]["model_remains"]
    entries.append({**entries[0], "model_name": "coding-plan-vlm", "current_interval_remaining_percent": 40})
    entries.append({**entries[0], "model_name": "speech-2.5-hd", "current_interval_remaining_percent": 1})

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == 40.0


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b["data"].pop("model_remains"),
        lambda b: b["data"]["model_remains"][0].update(model_name="speech-2.5-hd"),
        lambda b: [
            b["data"]["model_remains"][0].pop(k)
            for k in ("current_interval_remaining_percent", "current_interval_usage_count")
        ],
    ],
)
def test_it_gives_an_unverifiable_reading_for_missing_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = remains_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.note


@pytest.mark.parametrize(
    ("case", "classification"),
    [("rpm_rate_limit_in_body", "rate_limited"), ("invalid_key_in_body", "auth_failed")],
)
def test_it_raises_errors_carried_in_a_200_body(
    upstream: FakeUpstream, client: httpx.Client, case: str, classification: str
) -> None:
    upstream.serve_case(FIXTURE, case, method="GET", path=USAGE)

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, "minimax"), client, NOW)

    assert (raised.value.failure.classification, raised.value.status) == (classification, 200)
