from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from pytest_django.fixtures import Settings as SettingsWrapper

from ladder.domain.types import LadderConfig
from ladder.models import LadderConfiguration

pytestmark = pytest.mark.django_db


def test_it_creates_the_configuration_from_settings(settings: SettingsWrapper) -> None:
    settings.LADDER_DEFAULTS = {**settings.LADDER_DEFAULTS, "exit_cutoff_pct": 3.0, "budget_period": "day"}

    configuration = LadderConfiguration.load()

    assert configuration.pk == 1
    assert configuration.exit_cutoff_pct == 3.0
    assert configuration.budget_period == "day"
    assert configuration.rung_budget_usd == {}
    assert LadderConfiguration.load().pk == configuration.pk
    assert LadderConfiguration.objects.count() == 1


def test_it_keeps_a_single_configuration_row() -> None:
    LadderConfiguration.load()
    LadderConfiguration(exit_cutoff_pct=4.0).save()

    assert LadderConfiguration.objects.count() == 1
    assert LadderConfiguration.load().exit_cutoff_pct == 4.0


def test_it_reports_configuration_errors_per_field() -> None:
    configuration = LadderConfiguration.load()
    configuration.exit_cutoff_pct = 150.0
    configuration.max_reading_age_s = 0.0
    configuration.rung_budget_usd = {"cheap": -1, "gold": 5}

    with pytest.raises(ValidationError) as error:
        configuration.full_clean()

    errors = error.value.message_dict
    assert errors["exit_cutoff_pct"] == ["must be a number between 0 and 100"]
    assert errors["max_reading_age_s"] == ["must be a positive number"]
    assert any(message.startswith("cheap: must be a number ≥ 0") for message in errors["rung_budget_usd"])
    assert any("unknown rung 'gold'" in message for message in errors["rung_budget_usd"])


def test_it_allows_a_reentry_value_below_the_cutoff() -> None:
    configuration = LadderConfiguration.load()
    configuration.exit_cutoff_pct = 10.0
    configuration.reentry_min_remaining_pct = 1.0

    configuration.full_clean()
    assert configuration.to_domain().reentry_floor_pct == 10.0


def test_it_converts_the_configuration_to_the_domain() -> None:
    configuration = LadderConfiguration.load()
    configuration.rung_budget_usd = {"cheap": 5, "premium": 0}
    configuration.cheap_max_input_usd_per_mtok = 0.5

    config = configuration.to_domain()

    assert isinstance(config, LadderConfig)
    assert config.rung_budget_usd == {"cheap": 5.0, "premium": 0.0}
    assert config.cheap_max_input_usd_per_mtok == 0.5
    assert config.max_reading_age_s == 180.0
