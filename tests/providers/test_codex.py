from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.domain.windows import applicable_windows
from ladder.providers.codex import CodexAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("codex-chatgpt")
USAGE = "/backend-api/wham/usage"
AT_14 = datetime(2026, 9, 1, 14, 0, tzinfo=UTC)
WEEK_RESET = datetime(2026, 9, 5, 9, 0, tzinfo=UTC)
SPARK = "gpt-5.3-codex-spark"
adapter = CodexAdapter()


def usage_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["usage"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "codex", account_id="acct-FAKE0001"), client, NOW)


def test_it_reads_the_plan_windows_and_model_pools(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "codex", account_id="acct-FAKE0001"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (
        Window("5h", 58.0, AT_14),
        Window("7d", 82.0, WEEK_RESET),
        Window(f"5h-{SPARK}", 90.0, AT_14, (f"*{SPARK}*",)),
        Window(f"7d-{SPARK}", 97.0, WEEK_RESET, (f"*{SPARK}*",)),
    )
    assert reading.observed_overage == "meters-to-paid"
    sent = upstream.calls_to(USAGE)[0].headers
    assert (sent["authorization"], sent["chatgpt-account-id"]) == ("Bearer <credential>", "acct-FAKE0001")


def test_it_applies_model_pools_only_to_their_model(upstream: FakeUpstream, client: httpx.Client) -> None:
    reading = fetch_body(upstream, client, usage_body())

    assert {w.name for w in applicable_windows(reading, "gpt-5.1-codex")} == {"5h", "7d"}
    assert len(applicable_windows(reading, SPARK)) == 4


def test_it_identifies_windows_by_length_not_position(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = usage_body()
    body["rate_limit"]["primary_window"] = body["rate_limit"].pop("secondary_window")
    body["rate_limit"]["secondary_window"] = None

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    assert [w for w in reading.windows if not w.scope_models] == [Window("7d", 82.0, WEEK_RESET)]


def test_it_falls_back_to_reset_after_seconds(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = usage_body()
    del body["rate_limit"]["primary_window"]["reset_at"]

    reading = fetch_body(upstream, client, body)

    assert reading.windows[0] == Window("5h", 58.0, AT_14)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("rate_limit"),
        lambda b: b["rate_limit"]["primary_window"].pop("limit_window_seconds"),
        lambda b: b["rate_limit"]["primary_window"].pop("used_percent"),
        lambda b: b["rate_limit"].update(primary_window=None, secondary_window=None),
        lambda b: b["rate_limit"].update(limit_reached=True),
    ],
)
def test_it_gives_an_unverifiable_reading_for_missing_or_contradictory_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = usage_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.note


def test_it_tolerates_unknown_plan_types(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = usage_body()
    body["plan_type"] = "prolite"

    assert fetch_body(upstream, client, body).verifiable


@pytest.mark.parametrize(
    ("credits", "overage"),
    [
        ({"has_credits": False, "unlimited": False, "balance": "0"}, "hard-stop"),
        ({"has_credits": True, "unlimited": False, "balance": "0E-10"}, "hard-stop"),
        (
            {"has_credits": True, "unlimited": False, "balance": "5", "overage_limit_reached": True},
            "hard-stop",
        ),
        ({"has_credits": False, "unlimited": True}, "meters-to-paid"),
        (None, None),
    ],
)
def test_it_observes_credits_as_paid_overage_only_with_a_balance(
    upstream: FakeUpstream, client: httpx.Client, credits: object, overage: str | None
) -> None:
    body = usage_body()
    body["credits"] = credits

    assert fetch_body(upstream, client, body).observed_overage == overage


def test_it_reads_the_passive_codex_headers(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.serve_response(
        "POST", "/backend-api/codex/responses", FIXTURE["calls"]["responses_passive_headers"]["response"]
    )
    response = client.post(upstream.base_url + "/backend-api/codex/responses", json={})

    reading = adapter.read_headers(response.headers, NOW)

    assert reading is not None
    assert reading.source == "headers"
    assert reading.windows == (Window("5h", 58.0, AT_14), Window("7d", 82.0, WEEK_RESET))
    assert reading.observed_overage == "meters-to-paid"


def test_it_reads_exhaustion_from_the_headers_of_a_429() -> None:
    reading = adapter.read_headers(FIXTURE["errors"]["usage_limit_reached"]["headers"], NOW)

    assert reading is not None
    assert [(w.name, w.remaining_pct) for w in reading.windows] == [("5h", 0.0), ("7d", 20.0)]
    assert reading.observed_overage == "hard-stop"


def test_it_has_no_reading_for_headers_without_codex_windows() -> None:
    assert adapter.read_headers({"x-codex-plan-type": "plus"}, NOW) is None
