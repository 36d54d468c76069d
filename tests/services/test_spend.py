"""Spend counters: every way a usage event is written moves its day's and its month's counters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Sum

from ladder import models as m
from ladder.selectors.snapshot import spend_usd
from ladder.services.spend import spend_add

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
SEPT, SEPT_15, SEPT_14 = (
    datetime(2026, 9, 1, tzinfo=UTC),
    datetime(2026, 9, 15, tzinfo=UTC),
    NOW.replace(day=14),
)


def counters() -> dict[tuple[str, str, str], Decimal]:
    """(period, period start, rung) → spent, zero counters left out."""
    return {
        (row.period, f"{row.period_start:%Y-%m-%d}", row.rung): row.spent_usd
        for row in m.RungSpend.objects.all()
        if row.spent_usd
    }


def event(request_id: str, cost: str, *, rung: str | None = "cheap", at: datetime = NOW) -> m.UsageEvent:
    return m.UsageEvent.objects.create(
        request_id=request_id, budget_rung=rung, cost_usd=Decimal(cost), occurred_at=at
    )


def test_it_counts_an_event_in_its_day_and_its_month() -> None:
    event("a", "1.25")
    event("b", "0.50", rung="premium", at=NOW - timedelta(days=1))
    event("free", "9.00", rung=None)  # no budget rung: counts toward nothing

    assert counters() == {
        ("day", "2026-09-15", "cheap"): Decimal("1.25"),
        ("month", "2026-09-01", "cheap"): Decimal("1.25"),
        ("day", "2026-09-14", "premium"): Decimal("0.50"),
        ("month", "2026-09-01", "premium"): Decimal("0.50"),
    }
    assert spend_usd(period="month", now=NOW) == {"cheap": 1.25, "premium": 0.5}
    assert spend_usd(period="day", now=NOW) == {"cheap": 1.25, "premium": 0.0}


def test_it_moves_an_edited_event_from_what_it_counted_to_what_it_counts() -> None:
    row = event("a", "1.00")
    row.cost_usd = Decimal("3.00")
    row.occurred_at = NOW - timedelta(days=1)
    row.save()
    assert counters() == {
        ("day", "2026-09-14", "cheap"): Decimal("3.00"),
        ("month", "2026-09-01", "cheap"): Decimal("3.00"),
    }
    row.budget_rung = None
    row.save()
    assert counters() == {}


def test_it_forgets_deleted_events_one_by_one_and_by_queryset() -> None:
    event("a", "1.00")
    event("b", "2.00")
    event("c", "4.00", at=NOW + timedelta(days=20))  # October
    m.UsageEvent.objects.get(request_id="a").delete()
    assert counters()[("month", "2026-09-01", "cheap")] == Decimal("2.00")

    m.UsageEvent.objects.filter(request_id__in=["b", "c"]).delete()
    assert counters() == {}


def test_it_keeps_every_counter_equal_to_the_sum_of_its_events() -> None:
    for index in range(30):
        event(
            f"e{index}",
            f"0.{index:02d}",
            rung=("cheap", "premium")[index % 2],
            at=NOW - timedelta(hours=7 * index),
        )
    for row in m.UsageEvent.objects.filter(request_id__in=["e3", "e4", "e17"]):
        row.occurred_at += timedelta(days=3)
        row.save()
    m.UsageEvent.objects.filter(request_id__in=["e5", "e29"]).delete()

    for counter in m.RungSpend.objects.all():
        start = counter.period_start
        end = start + timedelta(days=1) if counter.period == "day" else start.replace(month=start.month + 1)
        total = m.UsageEvent.objects.filter(
            budget_rung=counter.rung, occurred_at__gte=start, occurred_at__lt=end
        ).aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)
        assert counter.spent_usd == total, (counter.period, start, counter.rung)


def test_it_adds_and_subtracts_in_one_call() -> None:
    spend_add(
        costs=[("cheap", NOW, Decimal("2")), ("cheap", NOW, Decimal("-0.5")), ("premium", NOW, Decimal("0"))]
    )
    assert counters() == {
        ("day", "2026-09-15", "cheap"): Decimal("1.5"),
        ("month", "2026-09-01", "cheap"): Decimal("1.5"),
    }
    assert not m.RungSpend.objects.filter(rung="premium").exists()  # nothing to add: no row


@pytest.mark.django_db(transaction=True)
def test_its_migration_counts_the_events_already_recorded() -> None:
    executor = MigrationExecutor(connection)
    before, after = [("ladder", "0009_escalation_log")], [("ladder", "0010_rung_spend")]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps.get_model("ladder", "UsageEvent")
        for request_id, rung, cost, at in [
            ("a", "cheap", "1.50", SEPT_15),
            ("b", "cheap", "2.00", SEPT_14),
            ("c", "premium", "0.25", SEPT),
            ("d", None, "7.00", SEPT),
        ]:
            old.objects.create(
                request_id=request_id, budget_rung=rung, cost_usd=Decimal(cost), occurred_at=at
            )
        executor.loader.build_graph()
        executor.migrate(after)
        assert counters() == {
            ("day", "2026-09-15", "cheap"): Decimal("1.50"),
            ("day", "2026-09-14", "cheap"): Decimal("2.00"),
            ("month", "2026-09-01", "cheap"): Decimal("3.50"),
            ("day", "2026-09-01", "premium"): Decimal("0.25"),
            ("month", "2026-09-01", "premium"): Decimal("0.25"),
        }
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
