from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.domain.windows import applicable_windows
from ladder.providers.claude import ClaudeOAuthAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("claude-oauth")
USAGE = "/api/oauth/usage"
AT_14 = datetime(2026, 9, 1, 14, 0, tzinfo=UTC)
adapter = ClaudeOAuthAdapter()


def usage_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["usage"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "claude"), client, NOW)


def by_name(reading: Reading) -> dict[str, Window]:
    return {w.name: w for w in reading.windows}


def test_it_reads_the_usage_endpoint_windows(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "claude"), client, NOW)

    assert reading.verifiable
    assert reading.source == "poll"
    assert reading.fetched_at == NOW
    assert by_name(reading) == {
        "5h": Window("5h", 63.0, datetime(2026, 9, 1, 14, 0, 0, 412805, tzinfo=UTC)),
        "7d": Window("7d", 78.0, datetime(2026, 9, 5, 9, 0, 0, 412830, tzinfo=UTC)),
        "7d-sonnet": Window(
            "7d-sonnet", 96.0, datetime(2026, 9, 5, 9, 0, 0, 412851, tzinfo=UTC), ("*sonnet*",)
        ),
    }
    assert reading.observed_overage == "meters-to-paid"


def test_it_sends_the_oauth_headers(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    adapter.fetch(connection_for(upstream, "claude"), client, NOW)

    sent = upstream.calls_to(USAGE)[0].headers
    assert sent["authorization"] == "Bearer <credential>"
    assert sent["anthropic-beta"] == "oauth-2025-04-20"


def test_it_scopes_the_model_weekly_window_so_it_spares_other_models(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = usage_body()
    body["seven_day_opus"] = {"utilization": 100.0, "resets_at": "2026-09-05T09:00:00Z"}

    reading = fetch_body(upstream, client, body)

    opus = [w.name for w in applicable_windows(reading, "claude-opus-4-1")]
    sonnet = [w.name for w in applicable_windows(reading, "claude-sonnet-4-5")]
    assert by_name(reading)["7d-opus"].remaining_pct == 0.0
    assert "7d-opus" in opus
    assert "7d-opus" not in sonnet


def test_it_takes_the_limits_array_when_the_flat_keys_are_null(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = usage_body()
    body.update(five_hour=None, seven_day=None, seven_day_sonnet=None)

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    assert {name: w.remaining_pct for name, w in by_name(reading).items()} == {
        "5h": 63.0,
        "7d": 78.0,
        "7d-sonnet": 96.0,
    }
    assert by_name(reading)["7d-sonnet"].scope_models == ("*sonnet*",)


def test_it_ignores_unknown_codename_keys(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = usage_body()
    body["iguana_necktie"] = {"utilization": 99.0, "resets_at": "2026-09-02T00:00:00Z"}
    body["seven_day_cowork"] = {"utilization": 100.0}

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    assert set(by_name(reading)) == {"5h", "7d", "7d-sonnet"}


@pytest.mark.parametrize(
    ("mutate", "missing"),
    [
        (lambda b: (b.pop("seven_day"), b["limits"].pop(1)), "7d"),
        (lambda b: (b.pop("five_hour"), b.pop("limits")), "5h"),
        (lambda b: (b["five_hour"].pop("utilization"), b.pop("limits")), "5h"),
        (lambda b: (b["five_hour"].update(utilisation=37, utilization="n/a"), b.pop("limits")), "5h"),
    ],
)
def test_it_gives_an_unverifiable_reading_when_a_window_is_missing_or_renamed(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any, missing: str
) -> None:
    body = usage_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert missing in reading.note
    assert all(w.remaining_pct > 0 for w in reading.windows)  # never a guessed 0 %


@pytest.mark.parametrize(
    ("extra", "overage"), [({"is_enabled": False}, "hard-stop"), (None, None), ({}, None)]
)
def test_it_observes_extra_usage_switched_off_or_unknown(
    upstream: FakeUpstream, client: httpx.Client, extra: object, overage: str | None
) -> None:
    body = usage_body()
    body["extra_usage"] = extra

    assert fetch_body(upstream, client, body).observed_overage == overage


def test_it_reads_the_unified_passive_headers(upstream: FakeUpstream, client: httpx.Client) -> None:
    call = FIXTURE["calls"]["messages_passive_headers"]
    upstream.serve_response("POST", "/v1/messages", call["response"])
    response = client.post(upstream.base_url + "/v1/messages", json={})

    reading = adapter.read_headers(response.headers, NOW)

    assert reading is not None
    assert reading.source == "headers"
    assert reading.verifiable
    windows = by_name(reading)
    assert windows["5h"].remaining_pct == pytest.approx(63.0)
    assert windows["5h"].reset_at == AT_14
    assert windows["7d"].remaining_pct == pytest.approx(78.0)
    assert windows["7d"].reset_at == datetime(2026, 9, 5, 9, 0, tzinfo=UTC)
    assert reading.observed_overage == "meters-to-paid"


def test_it_reads_a_rejected_window_as_spent_and_overage_in_use_as_paid() -> None:
    headers = FIXTURE["errors"]["plan_window_exhausted_overage_in_use"]["headers"]

    reading = adapter.read_headers(headers, NOW)

    assert reading is not None
    assert by_name(reading)["5h"].remaining_pct == 0.0
    assert reading.observed_overage == "meters-to-paid"


def test_it_observes_overage_switched_off_from_the_headers() -> None:
    reading = adapter.read_headers(FIXTURE["errors"]["plan_window_exhausted_no_overage"]["headers"], NOW)

    assert reading is not None
    assert reading.observed_overage == "hard-stop"


def test_it_scopes_model_claims_in_headers_and_skips_unknown_scopes() -> None:
    headers = {
        "Anthropic-Ratelimit-Unified-5h-Utilization": "0.2",
        "anthropic-ratelimit-unified-7d_sonnet-utilization": "0.9",
        "anthropic-ratelimit-unified-7d_sonnet-reset": "1788598800",
        "anthropic-ratelimit-unified-7d_oi-status": "rejected",
    }

    reading = adapter.read_headers(headers, NOW)

    assert reading is not None
    assert by_name(reading)["7d-sonnet"].scope_models == ("*sonnet*",)
    assert by_name(reading)["7d-sonnet"].remaining_pct == pytest.approx(10.0)
    assert set(by_name(reading)) == {"5h", "7d-sonnet"}


def test_it_classifies_a_model_scoped_rejection_naming_that_window() -> None:
    headers = {
        "anthropic-ratelimit-unified-5h-status": "allowed",
        "anthropic-ratelimit-unified-7d_oi-status": "rejected",
        "anthropic-ratelimit-unified-7d_oi-reset": "1788598800",
    }

    failure = adapter.classify_failure(429, headers, None, NOW)

    assert (failure.classification, failure.window) == ("quota_exhausted", "7d-oi")
    assert failure.reset_at == datetime(2026, 9, 5, 9, 0, tzinfo=UTC)


def test_it_names_the_latest_reset_when_several_windows_are_rejected() -> None:
    headers = {
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-reset": "1788271200",
        "anthropic-ratelimit-unified-7d-status": "rejected",
        "anthropic-ratelimit-unified-7d-reset": "1788598800",
    }

    failure = adapter.classify_failure(429, headers, None, NOW)

    assert failure.window == "7d"


def test_it_names_every_rejected_window_the_one_resetting_last_first() -> None:
    headers = {
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-reset": "1788271200",
        "anthropic-ratelimit-unified-7d_sonnet-status": "rejected",
        "anthropic-ratelimit-unified-7d_sonnet-reset": "1788598800",
        "anthropic-ratelimit-unified-7d-status": "allowed",
    }

    failure = adapter.classify_failure(429, headers, None, NOW)

    assert [(w.name, int(w.reset_at.timestamp())) for w in failure.windows if w.reset_at] == [
        ("7d-sonnet", 1788598800),
        ("5h", 1788271200),
    ]
    assert (failure.window, failure.reset_at) == ("7d-sonnet", failure.windows[0].reset_at)


def test_it_has_no_reading_for_headers_without_unified_fields() -> None:
    assert (
        adapter.read_headers(
            {"content-type": "application/json", "anthropic-ratelimit-tokens-limit": "1"}, NOW
        )
        is None
    )
