"""What the ladder observes: quota readings and their windows, upstream failures, and the heartbeats of
its periodic processes."""

from __future__ import annotations

from typing import ClassVar

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from ladder.domain.types import FAILURE_CLASSES, SOURCES
from ladder.models.connections import Connection
from ladder.models.fields import check_string_list, choices, one_of


class QuotaReading(models.Model):
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="readings")
    fetched_at = models.DateTimeField()
    source = models.CharField(max_length=16, choices=choices(SOURCES), default="poll")
    verifiable = models.BooleanField(default=True)
    observed_overage = models.CharField(  # noqa: DJ001
        max_length=16, choices=choices(("meters-to-paid", "hard-stop")), null=True, blank=True
    )
    note = models.TextField(blank=True, default="", help_text="Why the reading is unverifiable, for people.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["connection", "-fetched_at"], name="reading_conn_fetched_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            one_of("source", SOURCES, "reading_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.connection_id} @ {self.fetched_at:%Y-%m-%d %H:%M:%S}Z ({self.source})"


class QuotaWindow(models.Model):
    reading = models.ForeignKey(QuotaReading, on_delete=models.CASCADE, related_name="windows")
    name = models.CharField(max_length=64)
    remaining_pct = models.FloatField(validators=[MinValueValidator(0), MaxValueValidator(100)])
    reset_at = models.DateTimeField(null=True, blank=True)
    scope_models = models.JSONField(
        default=list, blank=True, help_text='Globs of model ids, e.g. ["*opus*"]; empty = every model.'
    )
    latched = models.BooleanField(default=False)
    position = models.PositiveSmallIntegerField(default=0)
    # When the window reaches its connection's cutoff at its current burn rate, computed as the
    # reading is stored (ladder.domain.forecast); null: no forecast (see exhausts_at there).
    exhausts_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["position", "id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(remaining_pct__gte=0) & Q(remaining_pct__lte=100),
                name="window_remaining_pct_range",
                violation_error_message="remaining_pct must be between 0 and 100.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.remaining_pct:g}%"

    def clean(self) -> None:
        check_string_list("scope_models", self.scope_models)


class FailureEvent(models.Model):
    """An upstream failure reported by the gateway (or met by a poll), as classified by its adapter."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="failures")
    status = models.PositiveSmallIntegerField()
    classification = models.CharField(max_length=32, choices=choices(FAILURE_CLASSES))
    model = models.CharField(max_length=200, blank=True, default="")
    window = models.CharField(max_length=64, blank=True, default="")
    # Every window a failure named as spent when it named more than one (the first is ``window``):
    # [{"name", "reset_at" (ISO or null)}]; empty when it named one window or none.
    windows = models.JSONField(default=list, blank=True)
    reset_at = models.DateTimeField(null=True, blank=True)
    cooldown_until = models.DateTimeField(null=True, blank=True)
    retry_after_s = models.FloatField(null=True, blank=True)
    detail = models.TextField(blank=True, default="")
    source = models.CharField(max_length=16, default="gateway")  # "gateway" report or "poll"
    observed_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["connection", "-observed_at"], name="failure_conn_observed_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.connection_id} {self.status} {self.classification}"


class Heartbeat(models.Model):
    """When a periodic process last ran (e.g. "beat": the refresh fan-out), for /readyz."""

    name = models.CharField(max_length=32, primary_key=True)
    last_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.last_at}"
