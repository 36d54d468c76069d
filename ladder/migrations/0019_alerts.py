
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0018_window_exhausts_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="AlertChannel",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64, unique=True)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("webhook", "webhook"),
                            ("slack", "slack"),
                            ("discord", "discord"),
                            ("email", "email"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "url",
                    models.URLField(blank=True, default="", help_text="Webhook kinds only.", max_length=500),
                ),
                ("secret_ciphertext", models.TextField(blank=True, default="", editable=False)),
                (
                    "email_to",
                    models.TextField(
                        blank=True,
                        default="",
                        help_text="E-mail only: addresses separated by commas or new lines.",
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["name"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("kind__in", ("webhook", "slack", "discord", "email"))),
                        name="alert_channel_kind_valid",
                        violation_error_message="kind must be one of webhook, slack, discord, email.",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="AlertRule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64, unique=True)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("window_latched", "window_latched"),
                            ("window_forecast", "window_forecast"),
                            ("auto_id_empty", "auto_id_empty"),
                            ("budget_crossed", "budget_crossed"),
                            ("connection_disabled", "connection_disabled"),
                            ("readings_stale", "readings_stale"),
                            ("beat_silent", "beat_silent"),
                        ],
                        max_length=32,
                    ),
                ),
                ("target", models.CharField(blank=True, default="", max_length=64)),
                ("threshold", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "quiet_period_s",
                    models.PositiveIntegerField(
                        default=900,
                        help_text="An episode of the same subject that opens within this many seconds of the last one closing continues it: no second alert.",
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                (
                    "channels",
                    models.ManyToManyField(blank=True, related_name="rules", to="ladder.alertchannel"),
                ),
            ],
            options={
                "ordering": ["kind", "name"],
            },
        ),
        migrations.CreateModel(
            name="AlertEpisode",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("subject", models.CharField(max_length=200)),
                ("summary", models.TextField(blank=True, default="")),
                ("detail", models.JSONField(blank=True, default=dict)),
                ("opened_at", models.DateTimeField()),
                ("last_seen_at", models.DateTimeField()),
                ("closed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "rule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="episodes",
                        to="ladder.alertrule",
                    ),
                ),
            ],
            options={
                "ordering": ["-opened_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="AlertDelivery",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("delivery_id", models.UUIDField(unique=True)),
                (
                    "event",
                    models.CharField(
                        choices=[("fired", "fired"), ("recovered", "recovered"), ("test", "test")],
                        max_length=16,
                    ),
                ),
                ("payload", models.JSONField(default=dict)),
                (
                    "status",
                    models.CharField(
                        choices=[("pending", "pending"), ("sent", "sent"), ("failed", "failed")],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField()),
                ("sent_at", models.DateTimeField(blank=True, null=True)),
                (
                    "channel",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="ladder.alertchannel",
                    ),
                ),
                (
                    "episode",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="ladder.alertepisode",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [models.Index(fields=["status", "created_at"], name="alert_delivery_status_idx")],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("episode__isnull", False)),
                        fields=("episode", "channel", "event"),
                        name="alert_delivery_once_per_event",
                        violation_error_message="An episode's event is delivered to a channel once.",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("status__in", ("pending", "sent", "failed")),
                            ("event__in", ("fired", "recovered", "test")),
                        ),
                        name="alert_delivery_status_event_valid",
                        violation_error_message="status or event is not one the ladder knows.",
                    ),
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="alertrule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "kind__in",
                        (
                            "window_latched",
                            "window_forecast",
                            "auto_id_empty",
                            "budget_crossed",
                            "connection_disabled",
                            "readings_stale",
                            "beat_silent",
                        ),
                    )
                ),
                name="alert_rule_kind_valid",
                violation_error_message="kind must be one of window_latched, window_forecast, auto_id_empty, budget_crossed, connection_disabled, readings_stale, beat_silent.",
            ),
        ),
        migrations.AddIndex(
            model_name="alertepisode",
            index=models.Index(fields=["rule", "subject", "-opened_at"], name="alert_episode_subject_idx"),
        ),
        migrations.AddConstraint(
            model_name="alertepisode",
            constraint=models.UniqueConstraint(
                condition=models.Q(("closed_at__isnull", True)),
                fields=("rule", "subject"),
                name="alert_episode_one_open",
                violation_error_message="A rule has at most one open episode per subject.",
            ),
        ),
    ]
