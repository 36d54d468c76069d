"""DESIGN §3: the ladder configuration, its defaults and its validation."""

from __future__ import annotations

from typing import Any

import pytest

from ladder.domain import LadderConfig, build_config, config_errors


def test_it_defaults_to_design_section_3() -> None:
    config = build_config({})
    assert config == LadderConfig()
    assert (
        config.exit_cutoff_pct,
        config.reentry_min_remaining_pct,
        config.max_reading_age_s,
        dict(config.rung_budget_usd),
        config.budget_period,
        config.free_max_input_usd_per_mtok,
        config.cheap_max_input_usd_per_mtok,
        config.refresh_interval_s,
    ) == (2.0, 5.0, 180.0, {}, "month", 0.0, 1.0, 60.0)
    assert config.reentry_floor_pct == 5.0


def test_it_builds_a_config_from_valid_values() -> None:
    values: dict[str, Any] = {
        "exit_cutoff_pct": 3,
        "reentry_min_remaining_pct": 8,
        "max_reading_age_s": 90,
        "rung_budget_usd": {"cheap": 5, "premium": 0},
        "budget_period": "day",
        "free_max_input_usd_per_mtok": 0.1,
        "cheap_max_input_usd_per_mtok": 2,
        "refresh_interval_s": 30,
    }
    assert config_errors(values) == {}
    config = build_config(values)
    assert config == LadderConfig(3.0, 8.0, 90.0, {"cheap": 5.0, "premium": 0.0}, "day", 0.1, 2.0, 30.0)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"exit_cutoff_pct": 0},
        {"exit_cutoff_pct": 100},
        {"reentry_min_remaining_pct": 0.5, "exit_cutoff_pct": 10},  # re-entry below cutoff: allowed
        {"rung_budget_usd": {}},
        {"rung_budget_usd": {"cheap": 0}},
        {"rung_budget_usd": {"premium": 12.5}},
        {"budget_period": "day"},
        {"budget_period": "month"},
        {"max_reading_age_s": 0.5},
        {"free_max_input_usd_per_mtok": 0, "cheap_max_input_usd_per_mtok": 0},
    ],
)
def test_it_accepts_valid_values(values: dict[str, Any]) -> None:
    assert config_errors(values) == {}


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"exit_cutoff_pct": 101}, "exit_cutoff_pct", ["0", "100"]),
        ({"exit_cutoff_pct": -1}, "exit_cutoff_pct", ["0", "100"]),
        ({"exit_cutoff_pct": "2"}, "exit_cutoff_pct", ["number"]),
        ({"exit_cutoff_pct": True}, "exit_cutoff_pct", ["number"]),
        ({"exit_cutoff_pct": float("nan")}, "exit_cutoff_pct", ["number"]),
        ({"reentry_min_remaining_pct": 100.5}, "reentry_min_remaining_pct", ["0", "100"]),
        ({"max_reading_age_s": 0}, "max_reading_age_s", ["positive"]),
        ({"max_reading_age_s": -5}, "max_reading_age_s", ["positive"]),
        ({"refresh_interval_s": 0}, "refresh_interval_s", ["positive"]),
        ({"refresh_interval_s": None}, "refresh_interval_s", ["positive"]),
        ({"free_max_input_usd_per_mtok": -0.01}, "free_max_input_usd_per_mtok", ["0"]),
        ({"cheap_max_input_usd_per_mtok": "cheap"}, "cheap_max_input_usd_per_mtok", ["number"]),
        ({"budget_period": "week"}, "budget_period", ["day", "month"]),
        ({"budget_period": None}, "budget_period", ["day", "month"]),
        ({"rung_budget_usd": {"cheap": -1}}, "rung_budget_usd.cheap", ["0"]),
        ({"rung_budget_usd": {"premium": "5"}}, "rung_budget_usd.premium", ["number"]),
        # a budget key other than cheap/premium is reported clearly, never ignored
        ({"rung_budget_usd": {"warp": 5}}, "rung_budget_usd.warp", ["cheap", "premium"]),
        ({"rung_budget_usd": {"free": 5}}, "rung_budget_usd.free", ["cheap", "premium"]),
        ({"rung_budget_usd": {"subscription": 0}}, "rung_budget_usd.subscription", ["cheap", "premium"]),
        ({"rung_budget_usd": [5]}, "rung_budget_usd", ["cheap"]),
        ({"on": True}, "on", ["accepted"]),
        ({"enabled": False}, "enabled", ["accepted"]),
    ],
)
def test_it_reports_each_invalid_value_by_field(values: dict[str, Any], field: str, words: list[str]) -> None:
    errors = config_errors(values)
    assert list(errors) == [field]
    for word in words:
        assert word in errors[field]


def test_it_reports_every_invalid_field_at_once() -> None:
    errors = config_errors({"exit_cutoff_pct": 200, "max_reading_age_s": 0, "rung_budget_usd": {"warp": 1}})
    assert set(errors) == {"exit_cutoff_pct", "max_reading_age_s", "rung_budget_usd.warp"}


def test_it_does_no_cross_field_check() -> None:
    assert config_errors({"exit_cutoff_pct": 50, "reentry_min_remaining_pct": 1}) == {}
    assert build_config({"exit_cutoff_pct": 50, "reentry_min_remaining_pct": 1}).reentry_floor_pct == 50.0
