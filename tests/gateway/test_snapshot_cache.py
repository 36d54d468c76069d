"""The API's snapshot cache: reused while the state version holds, never a state that a write overtook;
the live state (readings, latches, cooldowns) written since merged in without a reload."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.types import Reading, Snapshot, Window
from ladder.gateway import snapshot_cache
from ladder.gateway.snapshot_cache import SnapshotCache
from ladder.selectors.snapshot import snapshot_load, state_versions_get
from ladder.services.failures import FailureOutcome, failure_record
from ladder.services.readings import reading_record
from ladder.services.state import bump_live_version, bump_state_version
from tests.gateway.conftest import make_connection

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each snapshot load records how many connections it saw."""
    seen: list[int] = []
    real = snapshot_load

    def recording(**kwargs: object) -> object:
        snapshot = real(**kwargs)  # type: ignore[arg-type]
        seen.append(len(snapshot.connections))
        return snapshot

    monkeypatch.setattr(snapshot_cache, "snapshot_load", recording)
    return seen


@pytest.mark.django_db
def test_it_reuses_the_snapshot_while_the_version_holds(loads: list[int]) -> None:
    cache = SnapshotCache()
    first = cache.get(NOW)
    assert cache.get(NOW) is first
    bump_state_version()
    assert cache.get(NOW) is not first
    assert len(loads) == 2


@pytest.mark.django_db
def test_it_loads_again_when_a_write_lands_during_the_load(
    monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    real_versions = state_versions_get
    reads: list[tuple[int, int]] = []

    def version_then_write() -> tuple[int, int]:
        value = real_versions()
        reads.append(value)
        if len(reads) == 1:  # between the first version read and the rows: a connection is created
            m.Connection.objects.create(id="late", provider="claude", auth_type="oauth")
            bump_state_version()
        return value

    monkeypatch.setattr(snapshot_cache, "state_versions_get", version_then_write)
    cache = SnapshotCache()
    snapshot = cache.get(NOW)
    assert loads == [1, 1]  # the first load was overtaken by the write: loaded again
    assert [c.id for c in snapshot.connections] == ["late"]
    assert cache.get(NOW) is snapshot  # kept under the version it was read at


@pytest.mark.django_db
def test_it_keeps_an_overtaken_load_under_the_earlier_version(
    monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    real_versions = state_versions_get
    reads: list[tuple[int, int]] = []

    def overtaken_three_times() -> tuple[int, int]:
        value = real_versions()
        reads.append(value)
        if len(reads) <= SnapshotCache.LOAD_TRIES:
            bump_state_version()  # a write lands after this read, before the load's rows
        return value

    monkeypatch.setattr(snapshot_cache, "state_versions_get", overtaken_three_times)
    cache = SnapshotCache()
    first = cache.get(NOW)
    assert len(loads) == SnapshotCache.LOAD_TRIES  # gave up on a quiet moment after three tries
    # Kept under the version read before the last load, not the one after it: the next request
    # cannot tell that the last load saw one state, so it loads again.
    assert cache.get(NOW) is not first
    assert len(loads) == SnapshotCache.LOAD_TRIES + 1


@pytest.mark.django_db
def test_it_reads_the_spend_at_every_call_without_loading_the_state_again(loads: list[int]) -> None:
    cache = SnapshotCache()
    first = cache.get(NOW)
    # A usage report changes spend only: the state version stays, the routing inputs are kept.
    m.UsageEvent.objects.create(
        request_id="u1", budget_rung="cheap", cost_usd=Decimal("2.5"), occurred_at=NOW
    )

    second = cache.get(NOW)
    assert second.spend_usd == {"cheap": 2.5, "premium": 0.0}
    assert (second.connections, second.config) == (first.connections, first.config)
    assert second.memo is first.memo  # what was derived from the routing inputs is kept too
    assert cache.get(NOW) is second
    assert len(loads) == 1


@pytest.mark.django_db
def test_it_gives_pricing_the_cached_snapshot_for_one_query_until_the_state_version_moves(
    loads: list[int], django_assert_num_queries: Any
) -> None:
    make_connection("c1")
    cache = SnapshotCache()
    first = cache.get(NOW)
    m.UsageEvent.objects.create(
        request_id="u1", budget_rung="cheap", cost_usd=Decimal("2.5"), occurred_at=NOW
    )
    bump_live_version(["c1"])

    with django_assert_num_queries(1):  # the versions: neither the spend nor the live state
        assert cache.get_fixed(NOW) is first
    bump_state_version()
    reloaded = cache.get_fixed(NOW)

    assert reloaded is not first
    assert reloaded.spend_usd == {"cheap": 2.5, "premium": 0.0}
    assert len(loads) == 2


# --- live state: readings, latches, cooldowns merged in without reloading -----------------------

IN_2H = NOW + timedelta(hours=2)
IN_3D = NOW + timedelta(days=3)
U = "anthropic-ratelimit-unified-"


@pytest.fixture
def _no_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "ladder.services.failures.refresh_request", lambda *, connection_ids: list(connection_ids)
    )


def plan(connection_id: str = "c1") -> None:
    make_connection(
        connection_id,
        windows=[
            {"name": "5h", "remaining_pct": 40.0, "reset_at": IN_2H},
            {"name": "7d", "remaining_pct": 70.0, "reset_at": IN_3D, "scope_models": ["*opus*"]},
        ],
    )


def header_reading(connection_id: str, remaining_pct: float) -> None:
    """A 5h window read from a gateway's headers, stored now (a live write: no state version bump)."""
    reading = Reading(fetched_at=NOW, windows=(Window("5h", remaining_pct, IN_2H),), source="headers")
    reading_record(connection_id=connection_id, reading=reading, now=NOW)


def failure(status: int, headers: dict[str, str] | None = None) -> FailureOutcome:
    return failure_record(
        connection_id="c1",
        status=status,
        headers=headers or {},
        body=None,
        model="claude-sonnet-4-5",
        observed_at=NOW,
        now=NOW,
    )


def assert_same_as_a_full_load(snapshot: Snapshot) -> None:
    """The merged snapshot holds exactly what a load from scratch would (every field of every
    connection: none is dropped by the merge)."""
    loaded = snapshot_load(now=NOW)
    assert snapshot.connections == loaded.connections
    assert (snapshot.config, snapshot.models, snapshot.billing_catalog) == (
        loaded.config,
        loaded.models,
        loaded.billing_catalog,
    )


@pytest.mark.django_db
def test_it_sees_a_reading_written_since_without_loading_the_state_again(loads: list[int]) -> None:
    plan("c1")
    plan("c2")
    cache = SnapshotCache()
    first = cache.get(NOW)

    header_reading("c1", 1.0)

    second = cache.get(NOW)
    windows = second.connections_by_id["c1"].reading.windows  # type: ignore[union-attr]
    assert [(w.name, w.remaining_pct, w.latched) for w in windows] == [("5h", 1.0, True)]
    assert second.connections_by_id["c2"] is first.connections_by_id["c2"]  # the others are kept
    assert second.memo is not first.memo  # verdicts derived from the old reading are not reused
    assert cache.get(NOW) is second
    assert len(loads) == 1
    assert_same_as_a_full_load(second)


@pytest.mark.django_db
def test_it_merges_at_the_next_get_a_reading_that_pricing_skipped(loads: list[int]) -> None:
    plan("c1")
    cache = SnapshotCache()
    first = cache.get(NOW)
    header_reading("c1", 1.0)

    assert cache.get_fixed(NOW) is first
    second = cache.get(NOW)

    windows = second.connections_by_id["c1"].reading.windows  # type: ignore[union-attr]
    assert [(w.name, w.remaining_pct) for w in windows] == [("5h", 1.0)]
    assert len(loads) == 1
    assert_same_as_a_full_load(second)


@pytest.mark.django_db
def test_it_loads_again_for_a_live_write_to_a_connection_it_does_not_hold(loads: list[int]) -> None:
    plan("c1")
    cache = SnapshotCache()
    cache.get(NOW)
    m.Connection.objects.create(id="c9", provider="claude", auth_type="oauth")  # no version bump

    header_reading("c9", 50.0)

    assert "c9" in cache.get(NOW).connections_by_id  # never resolved as unknown_connection
    assert len(loads) == 2
    assert_same_as_a_full_load(cache.get(NOW))


@pytest.mark.django_db
def test_it_keeps_the_forecast_of_a_reading_merged_since(loads: list[int]) -> None:
    plan("c1")
    cache = SnapshotCache()
    cache.get(NOW)

    for minutes_ago, remaining in ((10, 60.0), (0, 40.0)):  # 2 % a minute: 2 % left in 19 min
        fetched_at = NOW - timedelta(minutes=minutes_ago)
        reading = Reading(fetched_at=fetched_at, windows=(Window("5h", remaining, IN_2H),), source="headers")
        reading_record(connection_id="c1", reading=reading, now=NOW)

    merged = cache.get(NOW).connections_by_id["c1"].reading
    assert merged is not None
    assert merged.windows[0].exhausts_at == NOW + timedelta(minutes=19)
    assert len(loads) == 1
    assert_same_as_a_full_load(cache.get(NOW))


@pytest.mark.django_db
@pytest.mark.usefixtures("_no_refresh")
def test_it_sees_the_latch_and_cooldown_of_a_quota_exhaustion_at_once(loads: list[int]) -> None:
    plan()
    cache = SnapshotCache()
    cache.get(NOW)

    outcome = failure(429, {f"{U}5h-status": "rejected"})

    assert outcome.classification == "quota_exhausted"
    connection = cache.get(NOW).connections_by_id["c1"]
    assert connection.cooldown_until == NOW + timedelta(seconds=60)  # level 0: 60 s, before the reset
    assert connection.reading is not None
    assert {w.name: (w.remaining_pct, w.latched) for w in connection.reading.windows}["5h"] == (0.0, True)
    assert len(loads) == 1
    assert_same_as_a_full_load(cache.get(NOW))


@pytest.mark.django_db
@pytest.mark.usefixtures("_no_refresh")
def test_it_sees_the_cooldown_of_a_rate_limit_at_once(loads: list[int]) -> None:
    plan()
    cache = SnapshotCache()
    cache.get(NOW)

    outcome = failure(429, {"retry-after": "42"})

    assert outcome.classification == "rate_limited"
    assert cache.get(NOW).connections_by_id["c1"].cooldown_until == NOW + timedelta(seconds=42)
    assert len(loads) == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("_no_refresh")
def test_it_loads_the_state_again_when_a_connection_is_disabled(loads: list[int]) -> None:
    plan()
    cache = SnapshotCache()
    cache.get(NOW)

    assert failure(401).classification == "auth_failed"

    connection = cache.get(NOW).connections_by_id["c1"]
    assert (connection.enabled, connection.disabled_reason) == (False, "auth_failed")
    assert len(loads) == 2


@pytest.mark.django_db
def test_it_merges_a_connection_without_reading_or_without_windows(loads: list[int]) -> None:
    plan("c1")
    make_connection("c2")
    cache = SnapshotCache()
    cache.get(NOW)

    reading_record(
        connection_id="c1",
        reading=Reading(fetched_at=NOW, windows=(), source="poll", verifiable=False, note="renamed"),
        now=NOW,
    )
    bump_live_version(["c2"])  # a cooldown cleared, say: stamped, with no reading at all

    snapshot = cache.get(NOW)
    assert snapshot.connections_by_id["c1"].reading == Reading(
        fetched_at=NOW, windows=(), source="poll", verifiable=False, note="renamed"
    )
    assert snapshot.connections_by_id["c2"].reading is None
    assert len(loads) == 1


@pytest.mark.django_db
def test_it_loads_again_when_the_live_version_went_back(loads: list[int]) -> None:
    plan()
    cache = SnapshotCache()
    cache.get(NOW)
    bump_live_version(["c1"])
    cache.get(NOW)
    m.StateVersion.objects.filter(pk=1).update(live=0)  # a database replaced under the process

    cache.get(NOW)

    assert len(loads) == 2
