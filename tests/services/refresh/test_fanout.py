"""Many polls at once (ladder.services.refresh.fanout)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.models import Connection
from ladder.selectors.snapshot import live_state_since, readings_latest, state_versions_get
from ladder.services.refresh.claim import claim_deadline, connections_claim, connections_claim_due
from ladder.services.refresh.fanout import connections_refresh_many
from tests.services.refresh.rows import KINDS, LEASE_S, make_connection

pytestmark = pytest.mark.django_db


def test_it_refreshes_many_connections_of_every_kind_concurrently(
    upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    settings.LADDER_REFRESH_CONCURRENCY = 64
    ids = []
    for kind in KINDS:
        for index in range(3):
            make_connection(upstream, f"{kind}-{index}", kind)
            ids.append(f"{kind}-{index}")
    control.slow(500)
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=1000, lease_s=LEASE_S)
    assert sorted(claimed) == sorted(ids)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))

    assert summary.claimed == len(ids)
    assert summary.outcomes == {"ok": len(ids)}
    # Serial would take 36 × ≥ 0.5 s = 18 s (gemini and antigravity make two calls); at once, the
    # slowest kind's two calls (1 s) and the database writes: 2–3 s here, PostgreSQL under a full run.
    assert summary.elapsed_s < 6.0
    latest = readings_latest()
    assert set(latest) == set(ids)
    assert all(r.verifiable for r in latest.values())
    assert not Connection.objects.filter(claimed_until__isnull=False).exists()


def test_it_caps_the_polls_in_flight_per_provider(
    upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    for index in range(4):
        make_connection(upstream, f"c{index}")
    control.slow(1000, kind="claude-oauth")  # long beside the writes, so the rounds stand out

    settings.LADDER_REFRESH_CONCURRENCY = 8

    def run(cap: int) -> float:
        settings.LADDER_REFRESH_PROVIDER_CONCURRENCY = {"claude": cap}
        now = timezone.now()
        claimed = connections_claim(connection_ids=[f"c{i}" for i in range(4)], now=now, lease_s=LEASE_S)
        summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))
        assert summary.outcomes == {"ok": 4}
        return summary.elapsed_s

    assert run(1) >= 4 * 1.0  # one at a time
    assert run(4) < 2 * 1.0  # all four at once: one round, where a cap of 2 or less would take two


def test_it_hands_back_unpolled_claims_at_its_deadline(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    for index in range(3):
        make_connection(upstream, f"c{index}")
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S), deadline_s=0)

    assert summary.outcomes == {"released": 3}
    assert not Connection.objects.filter(claimed_until__isnull=False).exists()
    assert control.count("claude-oauth") == 0
    assert connections_claim_due(now=timezone.now(), limit=10, lease_s=LEASE_S) == sorted(claimed)


def test_it_keeps_going_when_some_upstreams_fail(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    for cid in ("ok1", "ok2", "down", "bad", "gone"):
        make_connection(upstream, cid)
    control.error("claude-oauth", "http_502", connection="down")
    control.fault("claude-oauth", "malformed", connection="bad")
    control.error("claude-oauth", "token_expired", connection="gone")
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))

    assert summary.outcomes == {"ok": 2, "transient": 1, "unverifiable": 1, "auth_failed": 1}
    assert set(readings_latest()) == {"ok1", "ok2", "bad"}


def test_it_stamps_the_live_version_of_refreshed_connections(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    make_connection(upstream, "c2")
    version, live = state_versions_get()
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))

    after, after_live = state_versions_get()
    assert after == version  # readings are live state: the snapshot is not reloaded for them
    assert live < after_live <= live + 2  # one bump per batch of outcomes written
    live_state = live_state_since(live)
    assert {cid: reading for cid, (_, reading) in live_state.items()} == readings_latest()
