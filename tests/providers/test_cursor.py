from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers import FetchError
from ladder.providers.cursor import CursorAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("cursor")
USAGE = "/api/usage-summary"
CYCLE_END = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
adapter = CursorAdapter()


def summary_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["usage_summary"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "cursor"), client, NOW)


def test_it_reads_the_included_plan_budget(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "cursor"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (Window("monthly-plan", 42.0, CYCLE_END),)
    assert reading.observed_overage == "meters-to-paid"
    assert upstream.calls_to(USAGE)[0].headers["cookie"] == "WorkosCursorSessionToken=<credential>"


@pytest.mark.parametrize(
    ("drop", "remaining"),
    [(("totalPercentUsed",), 55.5), (("totalPercentUsed", "autoPercentUsed", "apiPercentUsed"), 42.0)],
)
def test_it_falls_back_to_the_pool_mean_then_to_cents(
    upstream: FakeUpstream, client: httpx.Client, drop: tuple[str, ...], remaining: float
) -> None:
    body = summary_body()
    for key in drop:
        del body["individualUsage"]["plan"][key]

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == remaining


def test_it_reads_small_percentages_as_percent_units(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = summary_body()
    body["individualUsage"]["plan"]["totalPercentUsed"] = 0.36

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == pytest.approx(99.64)


@pytest.mark.parametrize(
    ("on_demand", "overage"),
    [({"enabled": False}, "hard-stop"), ({"enabled": True, "limit": 0}, "hard-stop"), (None, None)],
)
def test_it_observes_on_demand_usage(
    upstream: FakeUpstream, client: httpx.Client, on_demand: object, overage: str | None
) -> None:
    body = summary_body()
    body["individualUsage"]["onDemand"] = on_demand

    assert fetch_body(upstream, client, body).observed_overage == overage


def test_it_gives_an_unverifiable_reading_without_plan_usage(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = summary_body()
    body["individualUsage"]["plan"] = {"enabled": True}

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.windows == ()


def test_it_treats_the_authenticator_redirect_as_an_auth_failure(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.serve_case(FIXTURE, "session_expired_redirect", method="GET", path=USAGE)

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, "cursor"), client, NOW)

    assert (raised.value.failure.classification, raised.value.transient) == ("auth_failed", False)
