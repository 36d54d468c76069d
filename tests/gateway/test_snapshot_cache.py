"""The API's snapshot cache: reused while the state version holds, never a state that a write overtook."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from ladder import models as m
from ladder import selectors
from ladder.gateway.snapshot_cache import SnapshotCache
from ladder.services import bump_state_version

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each snapshot load records how many connections it saw."""
    seen: list[int] = []
    real = selectors.snapshot_load

    def recording(**kwargs: object) -> object:
        snapshot = real(**kwargs)  # type: ignore[arg-type]
        seen.append(len(snapshot.connections))
        return snapshot

    monkeypatch.setattr(selectors, "snapshot_load", recording)
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
    real_version = selectors.state_version_get
    reads: list[int] = []

    def version_then_write() -> int:
        value = real_version()
        reads.append(value)
        if len(reads) == 1:  # between the first version read and the rows: a connection is created
            m.Connection.objects.create(id="late", provider="claude", auth_type="oauth")
            bump_state_version()
        return value

    monkeypatch.setattr(selectors, "state_version_get", version_then_write)
    cache = SnapshotCache()
    snapshot = cache.get(NOW)
    assert loads == [1, 1]  # the first load was overtaken by the write: loaded again
    assert [c.id for c in snapshot.connections] == ["late"]
    assert cache.get(NOW) is snapshot  # kept under the version it was read at


@pytest.mark.django_db
def test_it_keeps_an_overtaken_load_under_the_earlier_version(
    monkeypatch: pytest.MonkeyPatch, loads: list[int]
) -> None:
    real_version = selectors.state_version_get
    reads: list[int] = []

    def overtaken_three_times() -> int:
        value = real_version()
        reads.append(value)
        if len(reads) <= SnapshotCache.LOAD_TRIES:
            bump_state_version()  # a write lands after this read, before the load's rows
        return value

    monkeypatch.setattr(selectors, "state_version_get", overtaken_three_times)
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
