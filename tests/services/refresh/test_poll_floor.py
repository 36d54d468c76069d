"""DESIGN L5 as amended: a connection is polled no faster than its adapter's floor (Claude's usage
endpoint throttles pollers), and its readings stay fresh until the next poll is due.

Time is compressed by the floor setting (300 s lowered to 2 s) and the ladder's clock moved by hand,
not by sleeping through it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.domain.resolve import resolve
from ladder.domain.types import Candidate, Reading, Window
from ladder.domain.windows import PROVIDER_POLL_FLOOR_S
from ladder.models import Connection, FailureEvent
from ladder.providers import ADAPTERS
from ladder.selectors.snapshot import readings_latest, snapshot_load
from ladder.services.readings import reading_record
from ladder.services.refresh.claim import claim_deadline, connections_claim, connections_claim_due
from ladder.services.refresh.fanout import connections_refresh_many, refresh_connections_run
from ladder.services.state import configuration_update
from tests.services.refresh.rows import LEASE_S, claim, make_connection, refresh

pytestmark = pytest.mark.django_db

FLOOR_S = 2.0
SONNET = [Candidate("claude", "claude-sonnet-4-5", allowed_connection_ids=("c1",))]


@pytest.fixture
def floor(settings: Any) -> float:
    settings.LADDER_POLL_FLOOR_S = {"claude": FLOOR_S}
    return FLOOR_S


def test_it_declares_a_five_minute_floor_for_claudes_usage_endpoint_only() -> None:
    floors = {kind: adapter.poll_floor_s for kind, adapter in ADAPTERS.items() if adapter.poll_floor_s}
    assert floors == {"claude-oauth": 300.0}
    assert PROVIDER_POLL_FLOOR_S == {"claude": 300.0}


def test_it_shows_the_floor_as_the_connections_poll_interval(settings: Any) -> None:
    settings.LADDER_POLL_FLOOR_S = {}  # the adapters' own floors
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    Connection.objects.create(id="c2", provider="claude", auth_type="oauth", min_poll_interval_s=900)
    Connection.objects.create(id="k1", provider="openrouter", auth_type="apikey")

    snapshot = snapshot_load()

    assert {c.id: c.poll_interval_s for c in snapshot.connections} == {"c1": 300.0, "c2": 900.0, "k1": None}


def test_it_schedules_the_next_poll_no_sooner_than_the_floor(settings: Any) -> None:
    settings.LADDER_POLL_FLOOR_S = {}
    now = timezone.now()
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth", last_polled_at=now)

    stored = reading_record(
        connection_id="c1",
        reading=Reading(now, (Window("5h", 80.0, now + timedelta(seconds=30)),), "poll"),
        now=now,
    )

    # A reset in 30 s would bring the poll forward; the floor wins (DESIGN L5).
    assert stored.next_refresh_at == now + timedelta(seconds=300)


def test_it_makes_a_requested_refresh_wait_for_the_floor(
    upstream: FakeUpstream, control: FakeUpstreamControl, floor: float
) -> None:
    make_connection(upstream, "c1")
    assert refresh("c1", claim("c1")) == "ok"

    assert connections_claim(connection_ids=["c1"], now=timezone.now(), lease_s=LEASE_S) == []
    later = timezone.now() + timedelta(seconds=floor + 0.1)
    assert connections_claim(connection_ids=["c1"], now=later, lease_s=LEASE_S) == ["c1"]


def test_it_backs_off_a_429_of_the_usage_endpoint_without_taking_it_for_exhaustion(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    # A 429 that would read as a spent 5h window (Retry-After 2 h) if the gateway had met it.
    control.error("claude-oauth", "plan_window_exhausted_no_overage", connection="c1")
    started = timezone.now()

    assert refresh("c1", claim("c1")) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    assert row.next_refresh_at is not None
    assert row.next_refresh_at >= started + timedelta(seconds=7200)  # its Retry-After
    assert (row.cooldown_until, row.enabled) == (None, True)
    event = FailureEvent.objects.get()
    assert (event.source, event.classification, event.window, event.reset_at) == (
        "poll",
        "rate_limited",
        "",
        None,
    )
    assert readings_latest(connection_ids=["c1"]) == {}


def test_it_keeps_a_quiet_claude_plan_in_subscription_polling_once_per_floor(
    upstream: FakeUpstream, control: FakeUpstreamControl, floor: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reading alone would turn stale after 1 s; the floor (2 s) holds polls back longer.
    configuration_update(refresh_interval_s=1, max_reading_age_s=1)
    make_connection(upstream, "c1")
    # A Max plan without extra usage (CodexBar's capture), moved to now: hard-stop, verified.
    control.error("claude-oauth", "peer:01-fable-scoped-weekly-limit", connection="c1", call="usage")
    # Time is the ladder's clock, moved by hand: 4 floors pass in 0.1 s steps without sleeping.
    started = timezone.now()
    clock = [started]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    stretch = timedelta(seconds=4 * floor)
    pools: list[int] = []
    while clock[0] - started < stretch:
        # The beat's fan-out, then a resolution, which asks for the refreshes it lists.
        now = timezone.now()
        due = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)
        if due:
            connections_refresh_many(due, claim_until=claim_deadline(now, LEASE_S))
        resolution = resolve(snapshot_load(), "auto/subscription", SONNET, timezone.now())
        if resolution.refresh:
            refresh_connections_run(resolution.refresh, lease_s=LEASE_S)
        if clock[0] - started > timedelta(seconds=0.5):  # after the first poll has landed
            pools.append(len(resolution.pool))
            assert resolution.pool, [(x.connection_id, x.reason, x.detail) for x in resolution.excluded]
        clock[0] += timedelta(seconds=0.1)

    calls = control.count("claude-oauth", connection="c1", call="usage")
    assert len(pools) >= 30
    assert all(pools)
    assert 1 <= calls <= stretch.total_seconds() / floor + 1


def test_it_lets_fresh_passive_headers_stand_in_for_a_poll_behind_the_floor(settings: Any) -> None:
    settings.LADDER_POLL_FLOOR_S = {}
    now = timezone.now()
    Connection.objects.create(
        id="c1", provider="claude", auth_type="oauth", last_polled_at=now - timedelta(seconds=250)
    )

    stored = reading_record(
        connection_id="c1", reading=Reading(now, (Window("5h", 80.0, None),), "headers"), now=now
    )

    # The floor would allow a poll in 50 s; the headers are fresh for 180 + 300 s, so the poll waits
    # one poll interval after them, and each later header reading postpones it again.
    assert stored.next_refresh_at == now + timedelta(seconds=300)
