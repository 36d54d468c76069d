from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading
from ladder.providers.kiro import KiroAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("kiro")
OCT_1 = datetime(2026, 10, 1, tzinfo=UTC)
ARN = "arn:aws:codewhisperer:us-east-1:000000000000:profile/FAKEPROFILE01"
adapter = KiroAdapter()


def limits_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["GetUsageLimits"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("POST", "/", Route(body=body))
    return adapter.fetch(connection_for(upstream, "kiro", profile_arn=ARN), client, NOW)


def test_it_reads_the_monthly_credit_window(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "kiro", profile_arn=ARN), client, NOW)

    assert reading.verifiable
    [window] = reading.windows
    assert (window.name, window.reset_at, window.scope_models) == ("monthly-credits", OCT_1, ())
    assert window.remaining_pct == pytest.approx(38.763)
    assert reading.observed_overage == "meters-to-paid"
    sent = upstream.calls_to("/")[0]
    assert sent.headers["x-amz-target"] == "AmazonCodeWhispererService.GetUsageLimits"
    assert sent.headers["content-type"] == "application/x-amz-json-1.0"
    assert sent.json()["profileArn"] == ARN


def test_it_counts_overage_outside_the_plan(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = limits_body()
    body["usageBreakdownList"][0].update(currentUsageWithPrecision=1050.0, currentOveragesWithPrecision=50.0)

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == 0.0


def test_it_observes_overage_disabled(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = limits_body()
    body["overageConfiguration"]["overageStatus"] = "DISABLED"

    assert fetch_body(upstream, client, body).observed_overage == "hard-stop"


def test_it_keeps_the_window_but_drops_an_implausible_reset(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = limits_body()
    body["nextDateReset"] = body["usageBreakdownList"][0]["nextDateReset"] = 30.0

    reading = fetch_body(upstream, client, body)

    assert reading.windows[0].reset_at is None
    assert "nextDateReset" in reading.note


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("usageBreakdownList"),
        lambda b: b["usageBreakdownList"][0].update(resourceType="AGENTIC_REQUEST"),
        lambda b: [b["usageBreakdownList"][0].pop(k) for k in ("usageLimitWithPrecision", "usageLimit")],
        lambda b: b["usageBreakdownList"][0].update(usageLimitWithPrecision=0, usageLimit=0),
    ],
)
def test_it_gives_an_unverifiable_reading_for_missing_credit_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = limits_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.windows == ()


def test_it_asks_for_a_usage_reread_after_an_ambiguous_429_only() -> None:
    ambiguous = FIXTURE["errors"]["too_many_requests_ambiguous"]
    explicit = FIXTURE["errors"]["monthly_limit_reached"]

    throttled = adapter.classify_failure(429, ambiguous["headers"], ambiguous["body"], NOW)
    spent = adapter.classify_failure(402, explicit["headers"], explicit["body"], NOW)

    assert throttled.classification == "rate_limited"
    assert adapter.wants_usage_recheck(429, throttled)
    assert spent.classification == "quota_exhausted"
    assert not adapter.wants_usage_recheck(402, spent)
