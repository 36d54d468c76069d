"""L8: rung budgets per UTC calendar budget period."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ladder.domain.types import BudgetPeriod, LadderConfig, Reason, Rung

BUDGET_RUNG_NAMES: dict[Rung, str] = {Rung.CHEAP: "cheap", Rung.PREMIUM: "premium"}


def period_bounds(now: datetime, period: BudgetPeriod) -> tuple[datetime, datetime]:
    """[start, end) of the budget period containing now, in UTC."""
    utc = now.astimezone(UTC)
    if period == "day":
        start = utc.replace(hour=0, minute=0, second=0, microsecond=0)
        return start, start + timedelta(days=1)
    start = utc.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


@dataclass(frozen=True, slots=True)
class RungBudget:
    rung: str
    budget_usd: float | None  # None: not gated
    spent_usd: float
    period_ends_at: datetime

    @property
    def disabled(self) -> bool:
        return self.budget_usd is not None and self.budget_usd == 0

    @property
    def exhausted(self) -> bool:
        return self.budget_usd is not None and self.spent_usd >= self.budget_usd


def rung_budgets(
    config: LadderConfig, spend_usd: Mapping[str, float], now: datetime
) -> dict[Rung, RungBudget]:
    _, end = period_bounds(now, config.budget_period)
    return {
        rung: RungBudget(
            rung=name,
            budget_usd=config.rung_budget_usd.get(name),
            spent_usd=float(spend_usd.get(name, 0.0)),
            period_ends_at=end,
        )
        for rung, name in BUDGET_RUNG_NAMES.items()
    }


def budget_block(budget: RungBudget) -> tuple[str, str] | None:
    """(reason, detail) when the budget keeps its rung out of auto/thrifty, else None."""
    if budget.disabled:
        return Reason.RUNG_DISABLED, f"{budget.rung} rung disabled (budget $0)"
    if budget.exhausted:
        return (
            Reason.BUDGET_EXHAUSTED,
            f"{budget.rung} budget spent: ${budget.spent_usd:.2f} of ${budget.budget_usd:.2f} this period",
        )
    return None
