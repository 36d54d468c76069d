"""The admin of alert rules and episodes (issue 20): field errors named, history read-only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from ladder.models import AlertEpisode, AlertRule

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def rule_form(**overrides: str) -> dict[str, str]:
    data = {"name": "cheap at 90", "kind": "budget_crossed", "enabled": "on", "target": "cheap"}
    data |= {"threshold": "90", "quiet_period_s": "900"}
    return {**data, **overrides}


def test_it_lists_the_default_rules_and_renders_their_pages(admin_client: Client) -> None:
    rule = AlertRule.objects.get(name="Rung budget 80 %")
    episode = AlertEpisode.objects.create(
        rule=rule, subject="cheap", summary="cheap budget at 81 %", opened_at=NOW, last_seen_at=NOW
    )
    changelist = admin_client.get(reverse("admin:ladder_alertrule_changelist"))
    assert changelist.status_code == 200
    assert b"Readings stale 30 min" in changelist.content
    assert b"every enabled channel" in changelist.content
    assert admin_client.get(reverse("admin:ladder_alertrule_change", args=[rule.pk])).status_code == 200
    assert admin_client.get(reverse("admin:ladder_alertrule_add")).status_code == 200
    episodes = admin_client.get(reverse("admin:ladder_alertepisode_changelist"))
    assert b"cheap budget at 81 %" in episodes.content
    assert admin_client.get(reverse("admin:ladder_alertepisode_change", args=[episode.pk])).status_code == 200
    assert admin_client.get(reverse("admin:ladder_alertepisode_add")).status_code == 403


def test_it_saves_a_valid_rule(admin_client: Client) -> None:
    response = admin_client.post(reverse("admin:ladder_alertrule_add"), rule_form())
    assert response.status_code == 302
    assert AlertRule.objects.filter(name="cheap at 90", threshold=90, target="cheap").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"threshold": ""}, "threshold is required for budget_crossed rules"),
        ({"threshold": "5000"}, "threshold must be between 1 and 1000"),
        (
            {"kind": "readings_stale", "target": "", "threshold": ""},
            "threshold is required for readings_stale",
        ),
        ({"kind": "window_latched", "target": ""}, "threshold is not used by window_latched rules"),
        ({"target": "free"}, "target of a budget_crossed rule must be empty, cheap or premium"),
        ({"quiet_period_s": "9999999"}, "quiet_period_s must be between 0 and 604800"),
    ],
)
def test_it_names_the_field_of_a_bad_rule(
    admin_client: Client, overrides: dict[str, str], message: str
) -> None:
    response = admin_client.post(reverse("admin:ladder_alertrule_add"), rule_form(**overrides))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not AlertRule.objects.filter(name="cheap at 90").exists()
