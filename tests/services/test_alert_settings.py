from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from ladder import models as m
from ladder.services.alert_settings import alert_rule_update

pytestmark = pytest.mark.django_db


def rule() -> m.AlertRule:
    return m.AlertRule.objects.create(name="cheap budget", kind="budget_crossed", threshold=80)


def test_it_sets_enabled_threshold_and_quiet_period() -> None:
    row = rule()
    saved = alert_rule_update(rule_id=row.pk, enabled=False, threshold=" 50 ", quiet_period_s="600")
    assert (saved.enabled, saved.threshold, saved.quiet_period_s) == (False, 50, 600)
    assert m.AlertRule.objects.get(pk=row.pk).threshold == 50


def test_it_names_every_bad_field_and_saves_nothing() -> None:
    row = rule()
    with pytest.raises(ValidationError) as caught:
        alert_rule_update(rule_id=row.pk, enabled=False, threshold="half", quiet_period_s="-1")
    assert caught.value.message_dict == {
        "threshold": ["threshold must be a whole number; got 'half'."],
        "quiet_period_s": ["quiet_period_s must be 0 or more; got -1."],
    }
    row.refresh_from_db()
    assert (row.enabled, row.threshold, row.quiet_period_s) == (True, 80, 900)


def test_it_runs_the_rules_own_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """AlertRule.clean (what a kind needs) decides beyond the form's text: the edit calls full_clean."""
    row = rule()

    def clean(self: m.AlertRule) -> None:
        if self.kind == "budget_crossed" and self.threshold is None:
            raise ValidationError({"threshold": "budget_crossed needs a threshold (a percent)."})

    monkeypatch.setattr(m.AlertRule, "clean", clean)
    with pytest.raises(ValidationError) as caught:
        alert_rule_update(rule_id=row.pk, enabled=True, threshold="", quiet_period_s="60")
    assert caught.value.message_dict == {"threshold": ["budget_crossed needs a threshold (a percent)."]}
    row.refresh_from_db()
    assert (row.threshold, row.quiet_period_s) == (80, 900)


def test_it_raises_for_an_unknown_rule() -> None:
    with pytest.raises(m.AlertRule.DoesNotExist):
        alert_rule_update(rule_id=404, enabled=True, threshold="", quiet_period_s="60")
