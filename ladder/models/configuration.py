"""The one ladder configuration, and the state version that snapshots are cached by."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ladder.domain.config import CONFIG_FIELDS, build_config, config_errors
from ladder.domain.types import BUDGET_PERIODS, LadderConfig
from ladder.models.fields import choices


class LadderConfiguration(models.Model):
    """The one ladder configuration (DESIGN §3): pk is always 1."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    exit_cutoff_pct = models.FloatField(default=2.0, help_text="A window at or below this is exhausted.")
    reentry_min_remaining_pct = models.FloatField(
        default=5.0, help_text="A latched window comes back above max(this, the exit cutoff)."
    )
    max_reading_age_s = models.FloatField(default=180.0, help_text="Seconds a reading stays fresh.")
    rung_budget_usd = models.JSONField(
        default=dict,
        blank=True,
        help_text='USD per budget period for the cheap and premium rungs, e.g. {"cheap": 5.0, "premium": 0}; '
        "a rung absent = not gated, 0 = disabled.",
    )
    budget_period = models.CharField(max_length=8, choices=choices(BUDGET_PERIODS), default="month")
    free_max_input_usd_per_mtok = models.FloatField(default=0.0)
    cheap_max_input_usd_per_mtok = models.FloatField(default=1.0)
    refresh_interval_s = models.FloatField(default=60.0, help_text="Seconds between quota refreshes.")
    max_event_cost_usd = models.FloatField(
        default=100.0,
        help_text="A usage event priced above this many USD is refused (a gateway's typo or a hostile "
        "report would otherwise empty the rung budgets). Imports' spend is exempt.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "ladder configuration"
        verbose_name_plural = "ladder configuration"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(condition=Q(id=1), name="configuration_singleton"),
        ]

    def __str__(self) -> str:
        return "Ladder configuration"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.id = 1
        if self._state.adding and type(self).objects.filter(pk=1).exists():
            self._state.adding = False  # a second instance replaces the one row instead of clashing
        super().save(*args, **kwargs)

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        for key, message in config_errors(self.config_values()).items():
            field, _, rung = key.partition(".")
            errors.setdefault(field, []).append(f"{rung}: {message}" if rung else message)
        if errors:
            raise ValidationError(errors)

    @classmethod
    def from_settings(cls) -> LadderConfiguration:
        """An unsaved configuration holding settings.LADDER_DEFAULTS (DESIGN §3 where absent)."""
        defaults: dict[str, Any] = settings.LADDER_DEFAULTS or {}
        values = {key: defaults[key] for key in CONFIG_FIELDS if key in defaults}
        values["rung_budget_usd"] = dict(values.get("rung_budget_usd") or {})
        return cls(id=1, **values)

    @classmethod
    def load(cls) -> LadderConfiguration:
        """The configuration row, created from settings.LADDER_DEFAULTS the first time."""
        configuration, _ = cls.objects.get_or_create(pk=1, defaults=cls.from_settings().config_values())
        return configuration

    def config_values(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in CONFIG_FIELDS}

    def to_domain(self) -> LadderConfig:
        return build_config(self.config_values())


class StateVersion(models.Model):
    """Two counters. ``value``: bumped by every write of what a snapshot holds but the live state
    (services.state.bump_state_version); snapshots are cached by it. ``live``: bumped by every write of a
    connection's live state, its latest reading (with latches) or its cooldown, which also stamps
    the connection's ``live_seq`` (services.state.bump_live_version); a cached snapshot re-reads just
    those connections."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    value = models.PositiveBigIntegerField(default=0)
    live = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(condition=Q(id=1), name="state_version_singleton"),
        ]

    def __str__(self) -> str:
        return f"state version {self.value}"
