"""Usage and spend: each usage event the gateway reports, and the per-period spend of the budget rungs."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from django.db import models
from django.db.models import Q

from ladder.domain.types import BUDGET_PERIODS, BUDGET_RUNGS
from ladder.models.connections import Connection
from ladder.models.fields import RUNG_CHOICES, choices, one_of


class UsageEvent(models.Model):
    request_id = models.CharField(max_length=200, unique=True)
    # SET_NULL: spend is history that the budgets sum; deleting a connection must neither erase it
    # (the rung budget would silently refill) nor be blocked by it (PROTECT).
    connection = models.ForeignKey(
        Connection, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_events"
    )
    model = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)
    budget_rung = models.CharField(max_length=16, choices=choices(BUDGET_RUNGS), null=True, blank=True)  # noqa: DJ001
    cost_usd = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    occurred_at = models.DateTimeField()
    payload_hash = models.CharField(max_length=64, blank=True, default="")
    # The gateway token that reported the event (its spend ceiling counts it); null for events that no
    # token reported (imports, the admin) or whose token was deleted.
    token = models.ForeignKey(
        "GatewayToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_events"
    )
    # What the first report of this event was answered (the budgets after it), for its replays.
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["occurred_at"], name="usage_occurred_at_idx"),
            models.Index(fields=["token", "occurred_at"], name="usage_token_occurred_at_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(rung__isnull=True) | Q(rung__lte=4),
                name="usage_rung_range",
                violation_error_message="rung must be between 0 and 4.",
            ),
            one_of("budget_rung", BUDGET_RUNGS, "usage_budget_rung_valid", nullable=True),
            models.CheckConstraint(
                condition=Q(cost_usd__gte=0),
                name="usage_cost_non_negative",
                violation_error_message="cost_usd must be ≥ 0.",
            ),
        ]

    def __str__(self) -> str:
        return self.request_id


class RungSpend(models.Model):
    """Spend of one budget rung in one budget period: the sum of that period's usage events, kept as a
    counter so that a resolution reads its budgets in one small query whatever the volume of usage.

    Both period kinds are kept for every event (a day's and a month's counter), so that changing
    `budget_period` takes effect at once. The usage service adds to the counters in the transaction
    that inserts the events, with `UPDATE … SET spent_usd = spent_usd + x` (no lost update); the
    rare writes that change past events (imports, the admin) rebuild the periods they touch from the
    events (services.spend)."""

    period = models.CharField(max_length=8, choices=choices(BUDGET_PERIODS))
    period_start = models.DateTimeField()
    rung = models.CharField(max_length=16, choices=choices(BUDGET_RUNGS))
    spent_usd = models.DecimalField(max_digits=20, decimal_places=6, default=Decimal(0))

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["period", "period_start", "rung"], name="rung_spend_unique"),
            one_of("rung", BUDGET_RUNGS, "rung_spend_rung_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rung} {self.period} of {self.period_start:%Y-%m-%d}: ${self.spent_usd}"
