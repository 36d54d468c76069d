"""A connection's history over a range (ladder.selectors.history): values, one query each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pytest_django import DjangoAssertNumQueries

from ladder import models as m
from ladder.domain.types import Rung
from ladder.selectors.history import (
    FailureRow,
    UsageRow,
    WindowPoint,
    cooldowns_since,
    failures_latest,
    readings_oldest_at,
    usage_latest,
    usage_totals,
    window_points,
)

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture(autouse=True)
def rows() -> None:
    for cid in ("c1", "other"):
        m.Connection.objects.create(id=cid, provider="claude", auth_type="oauth")
    for cid, ago in (("c1", 3 * HOUR), ("c1", HOUR), ("c1", -HOUR), ("other", 2 * HOUR)):
        reading = m.QuotaReading.objects.create(connection_id=cid, fetched_at=NOW - ago)
        m.QuotaWindow.objects.create(reading=reading, name="7d", remaining_pct=80, position=1)
        m.QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=40, reset_at=NOW, position=0)
    for cid, observed, until in (
        ("c1", NOW - 3 * HOUR, NOW - 2.5 * HOUR),
        ("c1", NOW - HOUR, NOW - 0.5 * HOUR),
        ("c1", NOW - 0.5 * HOUR, None),
        ("other", NOW - HOUR, NOW),
    ):
        m.FailureEvent.objects.create(
            connection_id=cid,
            status=429,
            classification="quota_exhausted",
            cooldown_until=until,
            observed_at=observed,
        )
    for index, (cid, ago, rung) in enumerate((("c1", 30 * HOUR, 0), ("c1", HOUR, None), ("other", HOUR, 3))):
        m.UsageEvent.objects.create(
            request_id=f"r{index}",
            connection_id=cid,
            rung=rung,
            cost_usd=Decimal("0.25"),
            occurred_at=NOW - ago,
        )


def test_it_reads_the_windows_of_the_readings_in_the_range_oldest_first(
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    with django_assert_num_queries(2):
        points = window_points(connection_id="c1", since=NOW - 2 * HOUR, now=NOW)
        oldest = readings_oldest_at(connection_id="c1", since=NOW - 4 * HOUR, now=NOW)
    assert [(p.fetched_at, p.name) for p in points] == [(NOW - HOUR, "5h"), (NOW - HOUR, "7d")]
    assert points[0] == WindowPoint(points[0].reading_id, NOW - HOUR, "5h", 40, NOW)
    assert oldest == NOW - 3 * HOUR
    assert readings_oldest_at(connection_id="c1", since=NOW - 0.5 * HOUR, now=NOW) is None


def test_it_reads_the_cooldowns_that_reach_into_the_range(
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    with django_assert_num_queries(1):
        spans = cooldowns_since(connection_id="c1", since=NOW - 2 * HOUR, now=NOW)
    assert spans == [(NOW - HOUR, NOW - 0.5 * HOUR)]


def test_it_reads_the_latest_failures_and_usage_as_values() -> None:
    failures = failures_latest(connection_id="c1", limit=2)
    assert [f.observed_at for f in failures] == [NOW - 0.5 * HOUR, NOW - HOUR]
    assert isinstance(failures[0], FailureRow)
    assert failures[0].cooldown_until is None
    assert usage_latest(connection_id="c1") == [
        UsageRow(NOW - HOUR, None, 0, 0, None, 0.25),
        UsageRow(NOW - 30 * HOUR, None, 0, 0, Rung.SUBSCRIPTION, 0.25),
    ]
    assert usage_totals(connection_id="c1", since=NOW - 24 * HOUR) == (0.25, 1)
    assert usage_totals(connection_id="c1", since=NOW) == (0.0, 0)
