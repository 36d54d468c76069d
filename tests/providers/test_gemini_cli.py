from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Window
from ladder.domain.windows import applicable_windows
from ladder.providers import FetchError
from ladder.providers.gemini_cli import GeminiCliAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("gemini-cli")
LOAD = "/v1internal:loadCodeAssist"
QUOTA = "/v1internal:retrieveUserQuota"
DAILY_RESET = datetime(2026, 9, 2, 2, 0, tzinfo=UTC)
adapter = GeminiCliAdapter()


def quota_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["retrieveUserQuota"]["response"]["body"])


def test_it_reads_per_model_buckets_after_finding_the_project(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "gemini-cli"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (
        Window("gemini-2.5-pro", 82.0, DAILY_RESET, ("gemini-2.5-pro",)),
        Window("gemini-2.5-flash", 99.0, DAILY_RESET, ("gemini-2.5-flash",)),
        Window("gemini-2.5-flash-lite", 100.0, DAILY_RESET, ("gemini-2.5-flash-lite",)),
    )
    assert upstream.calls_to(LOAD)[0].json()["metadata"]["pluginType"] == "GEMINI"
    assert upstream.calls_to(QUOTA)[0].json() == {"project": "fake-project-123456"}


def test_it_scopes_each_bucket_to_its_model(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "gemini-cli"), client, NOW)

    assert [w.name for w in applicable_windows(reading, "gemini-2.5-flash")] == ["gemini-2.5-flash"]


def test_it_uses_a_known_project_without_load_code_assist(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    adapter.fetch(connection_for(upstream, "gemini-cli", project="my-project"), client, NOW)

    assert upstream.calls_to(LOAD) == []
    assert upstream.calls_to(QUOTA)[0].json() == {"project": "my-project"}


def test_it_never_polls_without_a_project(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)
    upstream.serve("POST", LOAD, Route(body={"currentTier": {"id": "standard-tier"}}))

    reading = adapter.fetch(connection_for(upstream, "gemini-cli"), client, NOW)

    assert not reading.verifiable
    assert "cloudaicompanionProject" in reading.note
    assert upstream.calls_to(QUOTA) == []


def test_it_leaves_a_model_with_an_unknown_bucket_without_a_window(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = quota_body()
    del body["buckets"][1]["remainingFraction"]
    upstream.serve("POST", QUOTA, Route(body=body))

    reading = adapter.fetch(connection_for(upstream, "gemini-cli", project="p"), client, NOW)

    assert reading.verifiable
    assert "gemini-2.5-pro" not in {w.name for w in reading.windows}
    assert "gemini-2.5-pro" in reading.note


def test_it_gives_an_unverifiable_reading_when_buckets_are_renamed(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.serve("POST", QUOTA, Route(body={"quotaBuckets": quota_body()["buckets"]}))

    reading = adapter.fetch(connection_for(upstream, "gemini-cli", project="p"), client, NOW)

    assert not reading.verifiable
    assert reading.windows == ()


def test_it_raises_the_quota_failure_of_the_quota_call(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.serve_case(FIXTURE, "rate_limit_retryable", method="POST", path=QUOTA)

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, "gemini-cli", project="p"), client, NOW)

    assert (raised.value.failure.classification, raised.value.failure.retry_after_s) == ("rate_limited", 4.2)


def test_it_binds_each_model_to_its_lowest_bucket_and_that_buckets_reset(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = quota_body()
    body["buckets"][1]["remainingFraction"] = 0.1  # the per-minute bucket, resetting at 12:01

    upstream.serve("POST", QUOTA, Route(body=body))
    reading = adapter.fetch(connection_for(upstream, "gemini-cli", project="p"), client, NOW)

    pro = next(w for w in reading.windows if w.name == "gemini-2.5-pro")
    assert (pro.remaining_pct, pro.reset_at) == (10.0, datetime(2026, 9, 1, 12, 1, tzinfo=UTC))
