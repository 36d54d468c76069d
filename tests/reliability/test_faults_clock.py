"""Clock edges through the API and the services (the domain's own tables are in tests/domain).

- A window whose reset is exactly ``now`` describes a period that is over (DESIGN L5: reset_at ≤ now):
  the reading is stale, ``auto/subscription`` waits for a new one, ``auto/thrifty`` admits the plan,
  both list it for a refresh; the beat's fan-out finds it due one second after that reset.
- A reading from the future is accepted up to 300 s ahead and refused past it, to the microsecond;
  its age clamps at 0, so it stays fresh for ``max_reading_age_s`` after its own time.
- A usage event from the future: the same 300 s, to the microsecond.

The API's clock is frozen (``ladder.gateway.clock.current_time``); real time cannot land exactly on an edge.
The fixtures ``gateway``, ``clock`` and ``refreshes`` are the API tests' (see conftest).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.timefmt import format_utc
from ladder.services.refresh.claim import connections_claim_due
from tests.gateway.conftest import (
    NOW,
    Api,
    Clock,
    RefreshRecorder,
    assert_error,
    assert_schema,
    make_connection,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

U = "anthropic-ratelimit-unified-"
RESET = NOW + timedelta(hours=1)
TOLERANCE = timedelta(seconds=300)
MICROSECOND = timedelta(microseconds=1)


def claude_headers(used: float, reset_at: Any = RESET) -> dict[str, str]:
    return {
        f"{U}status": "allowed",
        f"{U}5h-status": "allowed",
        f"{U}5h-utilization": str(used),
        f"{U}5h-reset": str(int(reset_at.timestamp())),
    }


def observe(gateway: Api, body: dict[str, Any]) -> Any:
    return gateway.post("/api/v1/connections/plan/observations", body)


def resolve(gateway: Api, model: str) -> dict[str, Any]:
    response = gateway.post("/api/v1/pools/resolve", {"model": model})
    assert response.status_code == 200, response.content
    return assert_schema(response, "/api/v1/pools/resolve", "post")


def judged(resolution: dict[str, Any]) -> tuple[set[str], dict[str, str], list[str]]:
    """(connections in the pool, excluded connection → reason, refresh list)."""
    pooled = {cid for entry in resolution["pool"] for cid in entry["allowed_connection_ids"]}
    return (
        pooled,
        {row["connection_id"]: row["reason"] for row in resolution["excluded"]},
        resolution["refresh"],
    )


def test_it_treats_a_window_resetting_exactly_now_as_a_period_that_is_over(
    gateway: Api, clock: Clock, refreshes: RefreshRecorder
) -> None:
    make_connection("plan", "claude", "oauth")
    clock.now = RESET - timedelta(seconds=60)
    assert observe(gateway, {"status": 200, "headers": claude_headers(0.5)}).status_code == 200
    # The beat polls again one second after the reset (not a whole refresh interval later).
    next_refresh_at = m.Connection.objects.get(pk="plan").next_refresh_at
    assert next_refresh_at == RESET + timedelta(seconds=1)

    clock.now = RESET - MICROSECOND
    assert judged(resolve(gateway, "auto/subscription")) == ({"plan"}, {}, [])

    clock.now = RESET
    pooled, excluded, refresh = judged(resolve(gateway, "auto/subscription"))
    assert pooled == set()
    assert set(excluded.values()) == {"window_reset_passed"}
    assert refresh == ["plan"]
    pooled, excluded, refresh = judged(resolve(gateway, "auto/thrifty"))
    assert "plan" in pooled  # fail open: trying a plan whose period is over costs nothing
    assert "plan" not in excluded
    assert refresh == ["plan"]
    assert refreshes.calls == [["plan"], ["plan"]]

    assert connections_claim_due(now=next_refresh_at - MICROSECOND, limit=10, lease_s=60) == []
    assert connections_claim_due(now=next_refresh_at, limit=10, lease_s=60) == ["plan"]


def test_it_accepts_a_reading_up_to_300_s_ahead_and_clamps_its_age_at_zero(
    gateway: Api, clock: Clock, refreshes: RefreshRecorder
) -> None:
    make_connection("plan", "claude", "oauth")
    clock.now = NOW
    ahead = NOW + TOLERANCE

    refused = observe(
        gateway,
        {"status": 200, "headers": claude_headers(0.4), "observed_at": format_utc(ahead + MICROSECOND)},
    )
    error = assert_error(refused, "/api/v1/connections/{connection_id}/observations", "post", 422)
    assert error["field"] == "observed_at"
    assert not m.QuotaReading.objects.exists()

    accepted = observe(
        gateway, {"status": 200, "headers": claude_headers(0.4), "observed_at": format_utc(ahead)}
    )
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["reading"]["fetched_at"] == format_utc(ahead)

    # Age max(0, now − fetched_at): fresh now, and until max_reading_age_s (180 s) after its own time.
    assert judged(resolve(gateway, "auto/subscription")) == ({"plan"}, {}, [])
    clock.now = ahead + timedelta(seconds=180)
    assert judged(resolve(gateway, "auto/subscription")) == ({"plan"}, {}, [])
    clock.now = ahead + timedelta(seconds=180) + MICROSECOND
    pooled, excluded, refresh = judged(resolve(gateway, "auto/subscription"))
    assert pooled == set()
    assert set(excluded.values()) == {"reading_stale"}
    assert refresh == ["plan"]
    detail = gateway.get("/api/v1/connections/plan").json()["connections"][0]["reading"]
    assert detail["fetched_at"] == format_utc(ahead)


def test_it_refuses_a_usage_event_more_than_300_s_ahead_to_the_microsecond(
    gateway: Api, clock: Clock
) -> None:
    make_connection("key", "openai", "apikey")
    clock.now = NOW

    def report(request_id: str, occurred_at: Any) -> Any:
        return gateway.post(
            "/api/v1/usage",
            {
                "request_id": request_id,
                "connection_id": "key",
                "model": "gpt-5-mini",
                "cost_usd": 0.5,
                "occurred_at": format_utc(occurred_at),
            },
        )

    error = assert_error(
        report("late", NOW + TOLERANCE + MICROSECOND), "/api/v1/usage", "post", 422, "future_event"
    )
    assert error["field"] == "occurred_at"
    assert report("edge", NOW + TOLERANCE).status_code == 200
    assert list(m.UsageEvent.objects.values_list("request_id", flat=True)) == ["edge"]
