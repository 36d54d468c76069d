"""Answer bodies of the contract (ladder.contract.api), built from domain values and written by
msgspec, times in UTC (`...Z`)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from django.http import HttpResponse

from ladder.contract import api
from ladder.domain.budgets import RungBudget
from ladder.domain.types import Reading, Rung


def answer(body: msgspec.Struct) -> HttpResponse:
    return HttpResponse(msgspec.json.encode(body), content_type="application/json")


def utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def utc_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC)


def budgets_answer(budgets: dict[Rung, RungBudget]) -> dict[str, api.Budget]:
    return {
        budget.rung: api.Budget(
            budget_usd=budget.budget_usd,
            spent_usd=round(budget.spent_usd, 6),
            period_ends_at=utc(budget.period_ends_at),
        )
        for budget in budgets.values()
    }


def reading_answer(reading: Reading | None) -> api.Reading | None:
    if reading is None:
        return None
    return api.Reading(
        fetched_at=utc(reading.fetched_at),
        source=reading.source,
        verifiable=reading.verifiable,
        observed_overage=reading.observed_overage,
        windows=tuple(
            api.Window(
                name=w.name,
                remaining_pct=w.remaining_pct,
                reset_at=utc_or_none(w.reset_at),
                scope_models=tuple(w.scope_models),
                latched=w.latched,
                exhausts_at=utc_or_none(w.exhausts_at),
            )
            for w in reading.windows
        ),
    )
