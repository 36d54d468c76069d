from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.domain.windows import applicable_windows, scope_matches
from ladder.providers.openrouter import FREE_MODELS, PAID_MODELS, OpenRouterAdapter, globs_not_ending_with
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("openrouter")
KEY = "/api/v1/key"
adapter = OpenRouterAdapter()


def key_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["key"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", KEY, Route(body=body))
    return adapter.fetch(connection_for(upstream, "openrouter"), client, NOW)


def test_it_reads_the_key_cap_and_the_free_daily_requests(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "openrouter"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (
        Window("key-limit", 38.25, datetime(2026, 10, 1, tzinfo=UTC), PAID_MODELS),
        Window("daily-requests", 99.0, datetime(2026, 9, 2, tzinfo=UTC), ("*:free",)),
    )


def test_it_keeps_the_key_cap_off_free_models_and_the_free_pool_off_paid_ones(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    reading = fetch_body(upstream, client, key_body())

    assert [w.name for w in applicable_windows(reading, "google/gemini-2.5-pro:free")] == ["daily-requests"]
    assert [w.name for w in applicable_windows(reading, "openai/gpt-4o")] == ["key-limit"]


@pytest.mark.parametrize(
    ("model", "paid"),
    [
        ("openai/gpt-4o", True),
        ("meta-llama/llama-3.3-70b-instruct:FREE", False),
        ("x:free", False),
        (":free", False),
        ("deepseek/deepseek-r1:freeze", True),
        ("vendor/model:fre", True),
        ("free", True),
        ("a", True),
        ("model:nitro", True),
    ],
)
def test_it_builds_globs_for_every_model_that_is_not_free(model: str, paid: bool) -> None:
    assert scope_matches(PAID_MODELS, model) is paid
    assert scope_matches(FREE_MODELS, model) is not paid
    assert globs_not_ending_with(":free") == PAID_MODELS


def test_it_reads_a_null_limit_as_no_key_cap(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = key_body()
    body["data"]["limit"] = None

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    assert [w.name for w in reading.windows] == ["daily-requests"]


@pytest.mark.parametrize(("period", "reset"), [("daily", datetime(2026, 9, 2, tzinfo=UTC)), (None, None)])
def test_it_resets_the_key_cap_at_its_period_boundary(
    upstream: FakeUpstream, client: httpx.Client, period: str | None, reset: datetime | None
) -> None:
    body = key_body()
    body["data"]["limit_reset"] = period

    assert fetch_body(upstream, client, body).windows[0].reset_at == reset


def test_it_leaves_free_models_unverified_without_the_free_counts(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = key_body()
    del body["data"]["free_model_daily_requests"]

    reading = fetch_body(upstream, client, body)

    assert applicable_windows(reading, "x/y:free") == ()
    assert "free_model_daily_requests" in reading.note


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("data"),
        lambda b: b["data"].pop("limit"),
        lambda b: [b["data"].pop(k) for k in ("limit_remaining", "usage", "usage_monthly")],
    ],
)
def test_it_gives_an_unverifiable_reading_for_missing_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = key_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.note


def test_it_counts_the_cap_periods_spend_without_limit_remaining(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = key_body()
    del body["data"]["limit_remaining"]

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    # limit 20 minus usage_monthly 12.35 (not the lifetime usage 41.3), as limit_remaining says.
    assert reading.windows[0].remaining_pct == pytest.approx(38.25)


def test_it_takes_the_daily_reset_from_the_relayed_headers() -> None:
    body = FIXTURE["errors"]["free_models_per_day"]["body"]

    failure = adapter.classify_failure(429, {}, body, NOW)

    assert (failure.window, failure.reset_at) == ("daily-requests", datetime(2026, 9, 2, tzinfo=UTC))
