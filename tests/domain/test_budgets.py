"""L8: rung budgets per UTC calendar period."""

from __future__ import annotations

from datetime import datetime

import pytest

from ladder.domain import LadderConfig, Reason, Rung, period_bounds, rung_budgets
from ladder.domain.budgets import budget_block
from ladder.domain.types import BudgetPeriod
from tests.domain.builders import NOW, at


@pytest.mark.parametrize(
    ("now", "period", "start", "end"),
    [
        ("2026-08-22T12:00:00Z", "day", "2026-08-22T00:00:00Z", "2026-08-23T00:00:00Z"),
        ("2026-08-22T00:00:00Z", "day", "2026-08-22T00:00:00Z", "2026-08-23T00:00:00Z"),
        ("2026-08-22T23:59:59.999999Z", "day", "2026-08-22T00:00:00Z", "2026-08-23T00:00:00Z"),
        ("2026-08-31T18:00:00Z", "day", "2026-08-31T00:00:00Z", "2026-09-01T00:00:00Z"),
        ("2026-12-31T18:00:00Z", "day", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z"),
        ("2028-02-28T10:00:00Z", "day", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z"),
        ("2026-08-22T12:00:00Z", "month", "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z"),
        ("2026-08-01T00:00:00Z", "month", "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z"),
        ("2026-12-15T08:00:00Z", "month", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"),
        ("2026-01-31T23:00:00Z", "month", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        ("2026-02-10T00:00:00Z", "month", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
        # offsets are converted to UTC before the calendar is read
        ("2026-08-23T01:30:00+02:00", "day", "2026-08-22T00:00:00Z", "2026-08-23T00:00:00Z"),
        ("2026-08-22T21:00:00-05:00", "day", "2026-08-23T00:00:00Z", "2026-08-24T00:00:00Z"),
        ("2026-09-01T01:00:00+02:00", "month", "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z"),
        ("2026-12-31T20:00:00-05:00", "month", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"),
    ],
)
def test_it_bounds_the_budget_period_in_utc(now: str, period: BudgetPeriod, start: str, end: str) -> None:
    got_start, got_end = period_bounds(at(now), period)
    assert (got_start, got_end) == (at(start), at(end))
    assert got_start.utcoffset() is not None
    assert got_end.utcoffset() is not None


@pytest.mark.parametrize(
    ("budgets", "spend", "blocks"),
    [
        # budget absent: not gated
        ({}, {}, {Rung.CHEAP: None, Rung.PREMIUM: None}),
        ({}, {"cheap": 1000.0}, {Rung.CHEAP: None, Rung.PREMIUM: None}),
        # 0 disables the rung, whatever the spend
        ({"premium": 0.0}, {}, {Rung.CHEAP: None, Rung.PREMIUM: Reason.RUNG_DISABLED}),
        ({"premium": 0.0}, {"premium": 3.0}, {Rung.CHEAP: None, Rung.PREMIUM: Reason.RUNG_DISABLED}),
        # spent ≥ budget: exhausted; spend absent = $0
        ({"cheap": 5.0}, {"cheap": 5.0}, {Rung.CHEAP: Reason.BUDGET_EXHAUSTED, Rung.PREMIUM: None}),
        ({"cheap": 5.0}, {"cheap": 7.5}, {Rung.CHEAP: Reason.BUDGET_EXHAUSTED, Rung.PREMIUM: None}),
        ({"cheap": 5.0}, {"cheap": 4.99}, {Rung.CHEAP: None, Rung.PREMIUM: None}),
        ({"cheap": 5.0}, {}, {Rung.CHEAP: None, Rung.PREMIUM: None}),
        ({"cheap": 5.0}, {"premium": 9.0}, {Rung.CHEAP: None, Rung.PREMIUM: None}),
        (
            {"cheap": 1.0, "premium": 2.0},
            {"cheap": 1.0, "premium": 2.0},
            {Rung.CHEAP: Reason.BUDGET_EXHAUSTED, Rung.PREMIUM: Reason.BUDGET_EXHAUSTED},
        ),
    ],
)
def test_it_gates_rungs_three_and_four_on_their_budgets(
    budgets: dict[str, float], spend: dict[str, float], blocks: dict[Rung, str | None]
) -> None:
    gates = rung_budgets(LadderConfig(rung_budget_usd=budgets), spend, NOW)
    assert set(gates) == {Rung.CHEAP, Rung.PREMIUM}
    got = {rung: (None if (b := budget_block(gate)) is None else b[0]) for rung, gate in gates.items()}
    assert got == blocks


@pytest.mark.parametrize(
    ("period", "now", "ends"),
    [
        ("month", "2026-08-22T12:00:00Z", "2026-09-01T00:00:00Z"),
        ("day", "2026-08-22T12:00:00Z", "2026-08-23T00:00:00Z"),
        ("month", "2026-12-15T08:00:00Z", "2027-01-01T00:00:00Z"),
    ],
)
def test_it_ends_the_budget_when_the_next_period_starts(period: BudgetPeriod, now: str, ends: str) -> None:
    config = LadderConfig(rung_budget_usd={"cheap": 1.0}, budget_period=period)
    gate = rung_budgets(config, {"cheap": 2.0}, at(now))[Rung.CHEAP]
    assert gate.period_ends_at == at(ends)


def test_it_explains_a_spent_budget_with_figures() -> None:
    gate = rung_budgets(LadderConfig(rung_budget_usd={"cheap": 5.0}), {"cheap": 6.25}, NOW)[Rung.CHEAP]
    block = budget_block(gate)
    assert block is not None
    assert "6.25" in block[1]
    assert "5" in block[1].replace("6.25", "")


def _aware(moment: datetime) -> bool:
    return moment.utcoffset() is not None


def test_it_returns_aware_bounds() -> None:
    assert all(_aware(m) for m in period_bounds(NOW, "month"))
