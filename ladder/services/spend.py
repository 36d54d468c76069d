"""Spend counters (models.RungSpend): per budget rung and budget period, the sum of the usage events.

The events stay the truth; the counters let a resolution read the period's spend in one small query
whatever the volume of usage. Every change is an addition in the transaction that changes the
events, with a conditional UPDATE (`spent_usd = spent_usd + x`), so concurrent reports never lose an
update:

- the usage service inserts events with bulk_create and calls `spend_add` itself;
- any other save or delete of a UsageEvent (an import, an operator's edit or delete in the admin, a
  shell) goes through the model and is counted by the receivers below (connected in apps.ready).
  A write that bypasses the model (QuerySet.update, raw SQL) must call `spend_add` itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from ladder import models as m
from ladder.domain.budgets import period_bounds
from ladder.domain.types import BUDGET_PERIODS, BudgetPeriod

SpendChange = tuple[str, datetime, Decimal]  # (budget rung, occurred_at, USD to add: negative removes)


def spend_add(*, costs: Iterable[SpendChange]) -> None:
    """Add events' budget costs to the counters of their day and their month.

    Call inside the transaction that writes the events. Counters are updated in one fixed order, so
    that two reports touching the same counters never wait on each other in a cycle."""
    totals: dict[tuple[BudgetPeriod, datetime, str], Decimal] = defaultdict(Decimal)
    for rung, occurred_at, cost in costs:
        for period in BUDGET_PERIODS:  # the event counts toward one period of each kind
            totals[(period, period_bounds(occurred_at, period)[0], rung)] += cost
    for (period, start, rung), amount in sorted(totals.items()):
        if not amount:
            continue
        counter = m.RungSpend.objects.filter(period=period, period_start=start, rung=rung)
        if counter.update(spent_usd=F("spent_usd") + amount):
            continue
        try:
            with transaction.atomic():
                m.RungSpend.objects.create(period=period, period_start=start, rung=rung, spent_usd=amount)
        except IntegrityError:  # another report created it meanwhile: add to theirs
            counter.update(spent_usd=F("spent_usd") + amount)


def _change(
    rung: str | None, occurred_at: datetime, cost_usd: Decimal | float, *, sign: int
) -> list[SpendChange]:
    return [] if rung is None else [(rung, occurred_at, sign * Decimal(str(cost_usd)))]


def usage_event_saving(sender: Any, instance: m.UsageEvent, **kwargs: Any) -> None:
    """pre_save: remember what an existing event counted before this save."""
    before = None
    if instance.pk is not None:
        before = (
            m.UsageEvent.objects.filter(pk=instance.pk)
            .values_list("budget_rung", "occurred_at", "cost_usd")
            .first()
        )
    instance._spend_before = before  # type: ignore[attr-defined]


def usage_event_saved(sender: Any, instance: m.UsageEvent, **kwargs: Any) -> None:
    """post_save: move the event's cost from what it counted before to what it counts now."""
    before = getattr(instance, "_spend_before", None)
    changes = [] if before is None else _change(before[0], before[1], before[2], sign=-1)
    changes += _change(instance.budget_rung, instance.occurred_at, instance.cost_usd, sign=1)
    spend_add(costs=changes)


def usage_event_deleted(sender: Any, instance: m.UsageEvent, **kwargs: Any) -> None:
    """post_delete: the event no longer counts."""
    spend_add(costs=_change(instance.budget_rung, instance.occurred_at, instance.cost_usd, sign=-1))
