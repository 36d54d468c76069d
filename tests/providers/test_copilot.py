from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers.copilot import CopilotAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("copilot")
USAGE = "/copilot_internal/user"
OCT_1 = datetime(2026, 10, 1, tzinfo=UTC)
adapter = CopilotAdapter()


def user_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["user_quota"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "copilot"), client, NOW)


def test_it_reads_premium_interactions_as_a_monthly_window(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "copilot"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (Window("monthly-premium", 62.4, OCT_1),)
    assert reading.observed_overage == "hard-stop"
    sent = upstream.calls_to(USAGE)[0].headers
    assert sent["authorization"] == "token <credential>"
    assert sent["editor-version"].startswith("vscode/")


def test_it_clamps_a_negative_percentage_to_zero(upstream: FakeUpstream, client: httpx.Client) -> None:
    reading = fetch_body(upstream, client, FIXTURE["errors"]["legacy_snapshot_over_quota"]["body"])

    assert reading.verifiable
    assert reading.windows == (Window("monthly-premium", 0.0, OCT_1),)


def test_it_computes_from_counts_without_a_percentage(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = user_body()
    del body["quota_snapshots"]["premium_interactions"]["percent_remaining"]

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == pytest.approx(62.4)


def test_it_reads_the_date_only_reset_as_utc_midnight(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = user_body()
    del body["quota_reset_date_utc"]

    assert fetch_body(upstream, client, body).windows[0].reset_at == OCT_1


def test_it_falls_back_to_the_first_of_next_month(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = user_body()
    del body["quota_reset_date_utc"], body["quota_reset_date"]

    assert fetch_body(upstream, client, body).windows[0].reset_at == OCT_1


def test_it_observes_a_positive_budget_as_paid_overage(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = user_body()
    body["quota_snapshots"]["premium_interactions"]["overage_permitted"] = True

    assert fetch_body(upstream, client, body).observed_overage == "meters-to-paid"


def test_it_has_no_gate_for_unlimited_premium(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = user_body()
    body["quota_snapshots"]["premium_interactions"]["unlimited"] = True

    reading = fetch_body(upstream, client, body)

    assert reading.windows == ()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b["quota_snapshots"].pop("premium_interactions"),
        lambda b: b["quota_snapshots"]["premium_interactions"].update(entitlement=0, remaining=0),
        lambda b: [
            b["quota_snapshots"]["premium_interactions"].pop(k) for k in ("percent_remaining", "remaining")
        ],
        lambda b: b.pop("quota_snapshots"),
    ],
)
def test_it_gives_an_unverifiable_reading_without_a_premium_percentage(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = user_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.windows == ()
    assert reading.note


def test_it_reads_the_free_plan_counts(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = {
        "copilot_plan": "free",
        "monthly_quotas": {"chat": 50, "completions": 2000},
        "limited_user_quotas": {"chat": 10, "completions": 1500},
        "limited_user_reset_date": "2026-10-01",
    }

    reading = fetch_body(upstream, client, body)

    assert reading.windows == (Window("monthly-chat", 20.0, OCT_1),)
