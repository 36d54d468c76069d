from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from ladder.models import LadderConfiguration

pytestmark = pytest.mark.django_db


def configuration_form(**overrides: str) -> dict[str, str]:
    data = {
        "exit_cutoff_pct": "2",
        "reentry_min_remaining_pct": "5",
        "max_reading_age_s": "180",
        "rung_budget_usd": "{}",
        "budget_period": "month",
        "free_max_input_usd_per_mtok": "0",
        "cheap_max_input_usd_per_mtok": "1",
        "refresh_interval_s": "60",
        "max_event_cost_usd": "100",
    }
    return {**data, **overrides}


def test_it_shows_configuration_field_errors(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(
        url, configuration_form(exit_cutoff_pct="150", rung_budget_usd='{"cheap": 5, "gold": 1}')
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert "must be a number between 0 and 100" in body
    assert "gold: unknown rung &#x27;gold&#x27;" in body
    assert LadderConfiguration.load().exit_cutoff_pct == 2.0


def test_it_refuses_a_negative_max_event_cost_naming_it(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(url, configuration_form(max_event_cost_usd="-1"))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["max_event_cost_usd"] == ["must be a number ≥ 0"]
    assert LadderConfiguration.load().max_event_cost_usd == 100.0
    admin_client.post(url, configuration_form(max_event_cost_usd="250"))
    assert LadderConfiguration.load().max_event_cost_usd == 250.0


def test_it_saves_a_valid_configuration(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(url, configuration_form(rung_budget_usd='{"cheap": 5, "premium": 0}'))

    assert response.status_code == 302
    assert LadderConfiguration.load().rung_budget_usd == {"cheap": 5, "premium": 0}


def test_it_offers_no_add_or_delete_for_the_configuration(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()

    assert admin_client.get(reverse("admin:ladder_ladderconfiguration_add")).status_code == 403
    delete_url = reverse("admin:ladder_ladderconfiguration_delete", args=[configuration.pk])
    assert admin_client.get(delete_url).status_code == 403
    assert LadderConfiguration.objects.count() == 1


def test_it_redirects_the_configuration_changelist_to_the_single_row(admin_client: Client) -> None:
    response = admin_client.get(reverse("admin:ladder_ladderconfiguration_changelist"))

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:ladder_ladderconfiguration_change", args=[1])
