from __future__ import annotations

from datetime import UTC, datetime

import httpx

from ladder.domain.types import Window
from ladder.providers.antigravity import AntigravityAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("antigravity")
MODELS = "/v1internal:fetchAvailableModels"
AT_13 = datetime(2026, 9, 1, 13, 0, tzinfo=UTC)
AT_15 = datetime(2026, 9, 1, 15, 0, tzinfo=UTC)
adapter = AntigravityAdapter()


def test_it_reads_per_model_quota_and_skips_internal_models(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "antigravity"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (
        Window("gemini-3.1-pro-high", 64.0, AT_15, ("gemini-3.1-pro-high",)),
        Window("gemini-3-flash", 64.0, AT_15, ("gemini-3-flash",)),
        Window("claude-sonnet-4-6", 42.0, AT_13, ("claude-sonnet-4-6",)),
        Window("claude-opus-4-6-thinking", 42.0, AT_13, ("claude-opus-4-6-thinking",)),
        Window("gpt-oss-120b", 42.0, AT_13, ("gpt-oss-120b",)),
    )
    assert reading.observed_overage is None
    sent = upstream.calls_to(MODELS)[0]
    assert sent.headers["user-agent"] == "antigravity"
    assert sent.json() == {"project": "fake-managed-project-1234"}


def test_it_treats_a_missing_fraction_as_unknown_never_zero(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = {"models": {"gemini-3-flash": {"quotaInfo": {"resetTime": "2026-09-01T15:00:00Z"}}}}
    upstream.serve("POST", MODELS, Route(body=body))

    reading = adapter.fetch(connection_for(upstream, "antigravity", project="p"), client, NOW)

    assert not reading.verifiable
    assert reading.windows == ()
    assert "gemini-3-flash" in reading.note


def test_it_reads_a_full_fraction_without_reset_as_unlimited(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.serve(
        "POST", MODELS, Route(body={"models": {"gemini-3-flash": {"quotaInfo": {"remainingFraction": 1}}}})
    )

    reading = adapter.fetch(connection_for(upstream, "antigravity", project="p"), client, NOW)

    assert reading.windows == (Window("gemini-3-flash", 100.0, None, ("gemini-3-flash",)),)


def test_it_gives_an_unverifiable_reading_without_models(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.serve("POST", MODELS, Route(body={"availableModels": []}))

    reading = adapter.fetch(connection_for(upstream, "antigravity", project="p"), client, NOW)

    assert not reading.verifiable
