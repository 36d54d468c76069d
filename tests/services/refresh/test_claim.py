"""Claims: who polls which connection, without locks (ladder.services.refresh.claim)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import OperationalError
from django.db import connection as db_connection
from django.utils import timezone

from ladder.models import Connection
from ladder.services.refresh.claim import claim_deadline, connections_claim, connections_claim_due
from tests.services.refresh.rows import LEASE_S, make_connection

pytestmark = pytest.mark.django_db


def test_it_claims_only_due_enabled_unclaimed_connections() -> None:
    now = timezone.now()
    make_connection(None, "never-polled")
    make_connection(None, "overdue", next_refresh_at=now - timedelta(seconds=5))
    make_connection(None, "not-yet", next_refresh_at=now + timedelta(seconds=5))
    make_connection(None, "disabled", enabled=False)
    make_connection(None, "keyless", keyless=True)
    make_connection(None, "held", claimed_until=now + timedelta(seconds=30))
    make_connection(None, "lapsed", claimed_until=now - timedelta(seconds=1))

    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    assert sorted(claimed) == ["lapsed", "never-polled", "overdue"]
    assert set(
        Connection.objects.filter(claimed_until=claim_deadline(now, LEASE_S)).values_list("id", flat=True)
    ) == {
        "lapsed",
        "never-polled",
        "overdue",
    }
    assert connections_claim_due(now=now + timedelta(seconds=1), limit=10, lease_s=LEASE_S) == []


def test_it_claims_no_more_than_the_limit_most_overdue_first() -> None:
    now = timezone.now()
    for index in range(5):
        make_connection(None, f"c{index}", next_refresh_at=now - timedelta(seconds=index))

    assert connections_claim_due(now=now, limit=2, lease_s=LEASE_S) == ["c4", "c3"]


def test_it_claims_named_connections_even_when_not_due() -> None:
    now = timezone.now()
    make_connection(None, "later", next_refresh_at=now + timedelta(hours=1))
    make_connection(None, "held", claimed_until=now + timedelta(seconds=30))

    assert connections_claim(connection_ids=["later", "held", "unknown"], now=now, lease_s=LEASE_S) == [
        "later"
    ]


def test_it_leaves_a_backed_off_poll_alone_even_when_a_refresh_is_asked_for() -> None:
    now = timezone.now()
    make_connection(None, "throttled", poll_backoff_level=2, next_refresh_at=now + timedelta(seconds=300))
    make_connection(None, "backoff-over", poll_backoff_level=2, next_refresh_at=now - timedelta(seconds=1))

    assert connections_claim(connection_ids=["throttled", "backoff-over"], now=now, lease_s=LEASE_S) == [
        "backoff-over"
    ]


def test_it_waits_for_the_operators_minimum_interval_when_a_refresh_is_asked_for() -> None:
    now = timezone.now()
    make_connection(None, "recent", min_poll_interval_s=300, last_polled_at=now - timedelta(seconds=299))
    make_connection(None, "floor-over", min_poll_interval_s=300, last_polled_at=now - timedelta(seconds=300))
    make_connection(None, "no-floor", last_polled_at=now - timedelta(seconds=1))

    claimed = connections_claim(connection_ids=["recent", "floor-over", "no-floor"], now=now, lease_s=LEASE_S)

    assert claimed == ["floor-over", "no-floor"]


def test_it_reclaims_a_killed_workers_connection_once_its_lease_lapses() -> None:
    now = timezone.now()
    make_connection(None, "c1")
    assert connections_claim_due(now=now, limit=10, lease_s=LEASE_S) == ["c1"]

    assert connections_claim_due(now=now + timedelta(seconds=LEASE_S - 1), limit=10, lease_s=LEASE_S) == []
    assert connections_claim_due(now=now + timedelta(seconds=LEASE_S + 1), limit=10, lease_s=LEASE_S) == [
        "c1"
    ]


@pytest.mark.django_db(transaction=True)
def test_it_never_hands_one_connection_to_two_concurrent_claimants() -> None:
    for index in range(60):
        make_connection(None, f"c{index:02d}")
    start = threading.Barrier(4)
    results: list[list[str]] = []
    lock = threading.Lock()

    def claimant(offset_us: int) -> None:
        try:
            start.wait()
            now = timezone.now() + timedelta(microseconds=offset_us)
            for _ in range(200):
                try:
                    got = connections_claim_due(now=now, limit=60, lease_s=LEASE_S)
                    break
                except OperationalError:  # SQLite's shared in-memory test database: "table is locked"
                    time.sleep(0.005)
            with lock:
                results.append(got)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=claimant, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    claimed = [cid for got in results for cid in got]
    assert len(results) == 4
    assert sorted(claimed) == [f"c{index:02d}" for index in range(60)]


def test_it_makes_the_claim_token_from_the_claim_time_and_lease() -> None:
    now = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)

    assert claim_deadline(now, 60) == now + timedelta(seconds=60)
    assert claim_deadline(now + timedelta(microseconds=1), 60) != claim_deadline(now, 60)
