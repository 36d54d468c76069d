"""Episodes remember when their recovery was sent (it waits for the rule's quiet period), and the
default alert rules: one per kind, the budget at 50, 80 and 100 %, a 15-minute quiet period."""

from typing import Any

from django.db import migrations, models

QUIET_PERIOD_S = 900
# (name, kind, threshold): thresholds are % of the budget, or minutes.
DEFAULT_RULES = (
    ("Plan window latched", "window_latched", None),
    ("Plan window runs out before its reset", "window_forecast", None),
    ("Auto id empty", "auto_id_empty", None),
    ("Rung budget 50 %", "budget_crossed", 50),
    ("Rung budget 80 %", "budget_crossed", 80),
    ("Rung budget 100 %", "budget_crossed", 100),
    ("Connection disabled or needs re-authentication", "connection_disabled", None),
    ("Readings stale 30 min", "readings_stale", 30),
    ("Beat silent 10 min", "beat_silent", 10),
)


def rules_create(apps: Any, schema_editor: Any) -> None:
    rule_model = apps.get_model("ladder", "AlertRule")
    for name, kind, threshold in DEFAULT_RULES:
        rule_model.objects.get_or_create(
            name=name, defaults={"kind": kind, "threshold": threshold, "quiet_period_s": QUIET_PERIOD_S}
        )


def rules_delete(apps: Any, schema_editor: Any) -> None:
    rule_model = apps.get_model("ladder", "AlertRule")
    for name, kind, _ in DEFAULT_RULES:
        rule_model.objects.filter(name=name, kind=kind).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0019_alerts"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertepisode",
            name="recovered_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="alertepisode",
            index=models.Index(
                condition=models.Q(("recovered_at__isnull", True)),
                fields=["rule", "subject"],
                name="alert_episode_unrecovered_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="alertepisode",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("recovered_at__isnull", True), ("closed_at__isnull", False), _connector="OR"
                ),
                name="alert_episode_recovered_after_close",
                violation_error_message="An episode recovers only once it is closed.",
            ),
        ),
        migrations.RunPython(rules_create, rules_delete),
    ]
