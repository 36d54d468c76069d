"""DESIGN §3: the ladder configuration and its validation."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ladder.domain.types import BUDGET_PERIODS, BUDGET_RUNGS, LadderConfig

PERCENT_FIELDS = ("exit_cutoff_pct", "reentry_min_remaining_pct")
POSITIVE_FIELDS = ("max_reading_age_s", "refresh_interval_s")
PRICE_FIELDS = ("free_max_input_usd_per_mtok", "cheap_max_input_usd_per_mtok", "max_event_cost_usd")
NUMBER_FIELDS = PERCENT_FIELDS + POSITIVE_FIELDS + PRICE_FIELDS
CONFIG_FIELDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(LadderConfig))


def is_number(value: Any) -> bool:
    """A finite int or float (never a bool); an integer too large for a float is no number here."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def config_errors(values: Mapping[str, Any]) -> dict[str, str]:
    """Field → message for every invalid value; unknown fields are errors too. No cross-field check."""
    errors: dict[str, str] = {}
    for key in values:
        if key not in CONFIG_FIELDS:
            errors[key] = f"unknown setting; accepted: {', '.join(CONFIG_FIELDS)}"
    for key in PERCENT_FIELDS:
        if key in values and not (is_number(values[key]) and 0 <= values[key] <= 100):
            errors[key] = "must be a number between 0 and 100"
    for key in POSITIVE_FIELDS:
        if key in values and not (is_number(values[key]) and values[key] > 0):
            errors[key] = "must be a positive number"
    for key in PRICE_FIELDS:
        if key in values and not (is_number(values[key]) and values[key] >= 0):
            errors[key] = "must be a number ≥ 0"
    if "budget_period" in values and values["budget_period"] not in BUDGET_PERIODS:
        errors["budget_period"] = f"must be one of: {', '.join(BUDGET_PERIODS)}"
    if "rung_budget_usd" in values:
        budgets = values["rung_budget_usd"]
        if not isinstance(budgets, Mapping):
            errors["rung_budget_usd"] = 'must be an object such as {"cheap": 5.0, "premium": 0}'
        else:
            for rung, amount in budgets.items():
                field = f"rung_budget_usd.{rung}"
                if rung not in BUDGET_RUNGS:
                    errors[field] = (
                        f"unknown rung {rung!r}; budgets exist only for: {', '.join(BUDGET_RUNGS)}"
                    )
                elif not (is_number(amount) and amount >= 0):
                    errors[field] = "must be a number ≥ 0 (0 disables the rung)"
    return errors


def build_config(values: Mapping[str, Any]) -> LadderConfig:
    """A LadderConfig from validated values; absent keys take the defaults of DESIGN §3."""
    kwargs: dict[str, Any] = {key: float(values[key]) for key in NUMBER_FIELDS if key in values}
    if "rung_budget_usd" in values:
        kwargs["rung_budget_usd"] = {rung: float(usd) for rung, usd in values["rung_budget_usd"].items()}
    if "budget_period" in values:
        kwargs["budget_period"] = values["budget_period"]
    return LadderConfig(**kwargs)
