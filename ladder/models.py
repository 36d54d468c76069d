"""The ladder's tables. Invariants live in Meta.constraints (raw writes obey them) and clean() (readable
messages in the admin and the services)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator, validate_email
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower, Trim

from ladder.domain.alerts import (
    ALERT_CHANNEL_KINDS,
    ALERT_DELIVERY_STATUSES,
    ALERT_EVENTS,
    ALERT_WEBHOOK_KINDS,
    RULE_KINDS,
    alert_email_addresses,
)
from ladder.domain.alerts import Rule as AlertRuleSpec
from ladder.domain.alerts import rule_errors as alert_rule_errors
from ladder.domain.billing import catalog_key_label, normalise_auth_type
from ladder.domain.config import CONFIG_FIELDS, build_config, config_errors
from ladder.domain.credentials import CREDENTIAL_OWNERS
from ladder.domain.types import (
    BILLINGS,
    BUDGET_PERIODS,
    BUDGET_RUNGS,
    CATEGORIES,
    CONNECTION_ID_PATTERN,
    FAILURE_CLASSES,
    OVERAGES,
    SOURCES,
    LadderConfig,
    rung_label,
)
from ladder.domain.windows import POLL_INTERVAL_MAX_S
from ladder.security.crypto import decrypt_credential, encrypt_credential

BILLING_CHOICES = [(value, value) for value in BILLINGS]
OVERAGE_CHOICES = [(value, value) for value in OVERAGES]
OBSERVED_OVERAGE_CHOICES = [("meters-to-paid", "meters-to-paid"), ("hard-stop", "hard-stop")]
SOURCE_CHOICES = [(value, value) for value in SOURCES]
BUDGET_PERIOD_CHOICES = [(value, value) for value in BUDGET_PERIODS]
BUDGET_RUNG_CHOICES = [(value, value) for value in BUDGET_RUNGS]
CREDENTIAL_OWNER_CHOICES = [
    ("ladder", "ladder: the ladder refreshes it"),
    ("gateway", "gateway: the gateway pushes each new access token"),
    ("static", "static: a key that does not expire"),
]
RUNG_CHOICES = [(0, "0 subscription"), (1, "1 keyless"), (2, "2 free"), (3, "3 cheap"), (4, "4 premium")]

CONNECTION_ID_MESSAGE = (
    "Connection id must be 1–64 characters, each a letter, a digit, '.', '_', ':' or '-' "
    "(it is the gateway's own connection id)."
)
AUTH_TYPE_HELP = "Trimmed and lower-cased on save (oauth, apikey, cookie…). Empty = provider-wide."
# An auth_type is stored normalised (or NULL) so that uniqueness holds after normalisation.
AUTH_TYPE_NORMALISED = Q(auth_type__isnull=True) | (~Q(auth_type="") & Q(auth_type=Lower(Trim("auth_type"))))

# Nullable strings (DJ001 silenced below): NULL is "not set" in STATE.md and in the domain (None), and
# a NULL auth_type is what makes a row provider-wide; "" is never stored (normalised on save).


def string_list_errors(value: Any, *, allowed: tuple[str, ...] | None = None) -> str | None:
    """A readable message when value is not a list of non-empty strings (from allowed, if given)."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        return 'must be a list of non-empty strings, e.g. ["a", "b"]'
    if allowed is not None:
        unknown = [item for item in value if item not in allowed]
        if unknown:
            return f"unknown value(s) {', '.join(unknown)}; accepted: {', '.join(allowed)}"
    return None


class BillingCatalogEntry(models.Model):
    provider = models.CharField(max_length=64)
    auth_type = models.CharField(max_length=64, null=True, blank=True, help_text=AUTH_TYPE_HELP)  # noqa: DJ001
    billing = models.CharField(max_length=16, choices=BILLING_CHOICES)
    overage = models.CharField(max_length=16, choices=OVERAGE_CHOICES)
    source_url = models.URLField(max_length=500, null=True, blank=True)  # noqa: DJ001
    notes = models.TextField(blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    # Fingerprint of the curated fields when the seed last wrote the row ("" = never seeded). A row
    # whose fields no longer match it was edited by an operator, and a seed re-load keeps it.
    seed_fingerprint = models.CharField(max_length=64, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["provider", "auth_type"]
        verbose_name = "billing catalog entry"
        verbose_name_plural = "billing catalog"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["provider", "auth_type"],
                condition=Q(auth_type__isnull=False),
                name="billing_unique_provider_auth_type",
                violation_error_message="A billing row for this provider and auth type already exists.",
            ),
            models.UniqueConstraint(
                fields=["provider"],
                condition=Q(auth_type__isnull=True),
                name="billing_unique_provider_wide",
                violation_error_message="This provider already has a provider-wide row (no auth type).",
            ),
            models.CheckConstraint(
                condition=AUTH_TYPE_NORMALISED,
                name="billing_auth_type_normalised",
                violation_error_message="auth_type must be trimmed, lower-case, and NULL rather than empty.",
            ),
            models.CheckConstraint(
                condition=Q(billing__in=BILLINGS),
                name="billing_billing_valid",
                violation_error_message=f"billing must be one of: {', '.join(BILLINGS)}.",
            ),
            models.CheckConstraint(
                condition=Q(overage__in=OVERAGES),
                name="billing_overage_valid",
                violation_error_message=f"overage must be one of: {', '.join(OVERAGES)}.",
            ),
        ]

    def __str__(self) -> str:
        return catalog_key_label(self.provider, self.auth_type)

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)


def validate_above_zero(value: float) -> None:
    """An exclusive minimum (Django's MinValueValidator includes its limit)."""
    if not value > 0:
        raise ValidationError("Ensure this value is greater than 0.", code="min_value")


# The disabled reasons that a new credential clears (DESIGN L7).
CREDENTIAL_REASONS = ("auth_failed", "needs_reauth")


class Connection(models.Model):
    id = models.CharField(
        primary_key=True,
        max_length=64,
        validators=[RegexValidator(CONNECTION_ID_PATTERN, message=CONNECTION_ID_MESSAGE, code="invalid_id")],
        help_text="The gateway's own connection id: letters, digits, '.', '_', ':' or '-', at most 64.",
    )
    provider = models.CharField(max_length=64)
    auth_type = models.CharField(max_length=64, null=True, blank=True, help_text=AUTH_TYPE_HELP)  # noqa: DJ001
    keyless = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    # Fernet token (ladder.security.crypto); never shown back. Empty = no credential stored.
    credential_ciphertext = models.TextField(blank=True, default="", editable=False)
    # The structured credential (issue 17): credential_ciphertext holds the access token; the refresh
    # token and what redeeming it needs are a Fernet-encrypted JSON object here. Its ciphertext
    # changes at every write, so a write-back compares it to what the refresher read (compare-and-set).
    refresh_ciphertext = models.TextField(blank=True, default="", editable=False)
    credential_owner = models.CharField(max_length=8, choices=CREDENTIAL_OWNER_CHOICES, default="static")
    credential_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    credential_account_id = models.CharField(max_length=200, blank=True, default="", editable=False)
    credential_updated_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A refresh's claim (a lease): set by a conditional UPDATE, so a dead claimer blocks no one long.
    refresh_claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    base_url = models.URLField(max_length=500, null=True, blank=True)  # noqa: DJ001
    overage_override = models.CharField(max_length=16, choices=OVERAGE_CHOICES, null=True, blank=True)  # noqa: DJ001
    cooldown_until = models.DateTimeField(null=True, blank=True)
    backoff_level = models.PositiveSmallIntegerField(default=0)
    # StateVersion.live at the last write of this connection's live state (its latest reading, latches,
    # cooldown): a resolution re-reads the connections whose live_seq passed its snapshot's.
    live_seq = models.PositiveBigIntegerField(default=0, db_index=True, editable=False)
    position = models.IntegerField(default=0, help_text="Connection order: lower first, then by id.")
    next_refresh_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Non-secret per-account values some quota endpoints need (Codex account_id, Kiro profile_arn,
    # Gemini project): a JSON object of strings.
    provider_params = models.JSONField(default=dict, blank=True)
    last_polled_at = models.DateTimeField(null=True, blank=True)
    poll_backoff_level = models.PositiveSmallIntegerField(default=0)
    last_poll_error = models.TextField(blank=True, default="")
    # DESIGN L5: the operator's minimum polling interval; when slower than refresh_interval_s it is
    # the connection's poll_interval_s, and its readings stay fresh that much longer.
    min_poll_interval_s = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_above_zero, MaxValueValidator(POLL_INTERVAL_MAX_S)],
        help_text="Poll no more often than every this many seconds (above 0, at most 86,400). When slower "
        "than the refresh interval, readings stay fresh for the reading age limit plus this. Empty: "
        "every refresh interval.",
    )
    # DESIGN L6 Reserve: quota kept for the operator's own use of the same account.
    reserve_pct = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        help_text="Keep this much of every window (0–100 %) for your own use: the connection leaves the "
        "plan rung at or below it and comes back only above it plus the hysteresis band. Empty: none.",
    )
    # Last on purpose: from here on, `models` in this class body is this field, not django.db.models.
    models = models.JSONField(
        null=True,
        blank=True,
        default=None,
        # As in a state file: null serves every catalog model of the provider, [] none.
        help_text='Model ids, e.g. ["claude-sonnet-4-5"]. Leave empty for every catalog model of its '
        "provider; [] for none (the connection then serves only candidates the gateway names).",
    )

    class Meta:
        ordering: ClassVar[list[str]] = ["position", "id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(id__regex=CONNECTION_ID_PATTERN),
                name="connection_id_format",
                violation_error_message=CONNECTION_ID_MESSAGE,
            ),
            models.CheckConstraint(
                condition=AUTH_TYPE_NORMALISED,
                name="connection_auth_type_normalised",
                violation_error_message="auth_type must be trimmed, lower-case, and NULL rather than empty.",
            ),
            models.CheckConstraint(
                condition=Q(overage_override__isnull=True) | Q(overage_override__in=OVERAGES),
                name="connection_overage_override_valid",
                violation_error_message=f"overage_override must be empty or one of: {', '.join(OVERAGES)}.",
            ),
            models.CheckConstraint(
                condition=Q(min_poll_interval_s__isnull=True)
                | (Q(min_poll_interval_s__gt=0) & Q(min_poll_interval_s__lte=POLL_INTERVAL_MAX_S)),
                name="connection_min_poll_interval_range",
                violation_error_message=f"min_poll_interval_s must be empty, or above 0 and at most "
                f"{POLL_INTERVAL_MAX_S:g}.",
            ),
            models.CheckConstraint(
                condition=Q(reserve_pct__isnull=True) | (Q(reserve_pct__gte=0) & Q(reserve_pct__lte=100)),
                name="connection_reserve_pct_range",
                violation_error_message="reserve_pct must be empty or between 0 and 100.",
            ),
            models.CheckConstraint(
                condition=Q(credential_owner__in=CREDENTIAL_OWNERS),
                name="connection_credential_owner_valid",
                violation_error_message=f"credential_owner must be one of: {', '.join(CREDENTIAL_OWNERS)}.",
            ),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["next_refresh_at"], name="connection_next_refresh_idx"),
        ]

    def __str__(self) -> str:
        return self.id

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)
        if self.models is not None:
            message = string_list_errors(self.models)
            if message:
                raise ValidationError({"models": f"models {message}, or null for every catalog model"})

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_ciphertext)

    def set_credential(self, plaintext: str | None) -> None:
        """Encrypt and keep plaintext (None or "" clears it). The caller saves."""
        self.credential_ciphertext = encrypt_credential(plaintext) if plaintext else ""

    def replace_credential(self, plaintext: str | None) -> None:
        """An operator's new plain credential (a key, or a token pasted by hand). The old login's
        refresh token and expiry do not belong to it: dropped, so no refresh overwrites the new one.
        A new credential clears auth_failed and needs_reauth (DESIGN L7). The caller saves."""
        self.set_credential(plaintext)
        self.refresh_ciphertext = ""
        self.credential_expires_at = None
        if plaintext and self.disabled_reason in CREDENTIAL_REASONS:
            self.enabled = True
            self.disabled_reason = None

    def get_credential(self) -> str | None:
        if not self.credential_ciphertext:
            return None
        return decrypt_credential(self.credential_ciphertext)

    @property
    def has_refresh_token(self) -> bool:
        return bool(self.refresh_ciphertext)


class QuotaReading(models.Model):
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="readings")
    fetched_at = models.DateTimeField()
    source = models.CharField(max_length=16, choices=SOURCE_CHOICES, default="poll")
    verifiable = models.BooleanField(default=True)
    observed_overage = models.CharField(  # noqa: DJ001
        max_length=16, choices=OBSERVED_OVERAGE_CHOICES, null=True, blank=True
    )
    note = models.TextField(blank=True, default="", help_text="Why the reading is unverifiable, for people.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["connection", "-fetched_at"], name="reading_conn_fetched_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(source__in=SOURCES),
                name="reading_source_valid",
                violation_error_message=f"source must be one of: {', '.join(SOURCES)}.",
            ),
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
        message = string_list_errors(self.scope_models)
        if message:
            raise ValidationError({"scope_models": f"scope_models {message}"})


class ModelCatalogEntry(models.Model):
    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    input_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text="USD per million input tokens; empty = no price (premium).",
    )
    output_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, validators=[MinValueValidator(Decimal(0))]
    )
    free = models.BooleanField(default=False)
    categories = models.JSONField(default=list, blank=True, help_text=f"Any of: {', '.join(CATEGORIES)}.")
    position = models.IntegerField(default=0, help_text="Catalog order: lower first.")
    seed_fingerprint = models.CharField(max_length=64, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["position", "id"]
        verbose_name = "model catalog entry"
        verbose_name_plural = "model catalog"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["provider", "model"],
                name="model_catalog_unique_provider_model",
                violation_error_message="This provider already has this model in the catalog.",
            ),
            models.CheckConstraint(
                condition=Q(input_usd_per_mtok__isnull=True) | Q(input_usd_per_mtok__gte=0),
                name="model_catalog_input_price_non_negative",
                violation_error_message="input_usd_per_mtok must be ≥ 0.",
            ),
            models.CheckConstraint(
                condition=Q(output_usd_per_mtok__isnull=True) | Q(output_usd_per_mtok__gte=0),
                name="model_catalog_output_price_non_negative",
                violation_error_message="output_usd_per_mtok must be ≥ 0.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"

    def clean(self) -> None:
        message = string_list_errors(self.categories, allowed=CATEGORIES)
        if message:
            raise ValidationError({"categories": f"categories {message}"})


class UsageEvent(models.Model):
    request_id = models.CharField(max_length=200, unique=True)
    # SET_NULL: spend is history that the budgets sum; deleting a connection must neither erase it
    # (the rung budget would silently refill) nor be blocked by it (PROTECT).
    connection = models.ForeignKey(
        Connection, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_events"
    )
    model = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)
    budget_rung = models.CharField(max_length=16, choices=BUDGET_RUNG_CHOICES, null=True, blank=True)  # noqa: DJ001
    cost_usd = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    occurred_at = models.DateTimeField()
    payload_hash = models.CharField(max_length=64, blank=True, default="")
    # The gateway token that reported the event (its spend ceiling counts it); null for events that no
    # token reported (imports, the admin) or whose token was deleted.
    token = models.ForeignKey(
        "GatewayToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_events"
    )
    # What the first report of this event was answered (the budgets after it), for its replays.
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["occurred_at"], name="usage_occurred_at_idx"),
            models.Index(fields=["token", "occurred_at"], name="usage_token_occurred_at_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(rung__isnull=True) | Q(rung__lte=4),
                name="usage_rung_range",
                violation_error_message="rung must be between 0 and 4.",
            ),
            models.CheckConstraint(
                condition=Q(budget_rung__isnull=True) | Q(budget_rung__in=BUDGET_RUNGS),
                name="usage_budget_rung_valid",
                violation_error_message=f"budget_rung must be empty or one of: {', '.join(BUDGET_RUNGS)}.",
            ),
            models.CheckConstraint(
                condition=Q(cost_usd__gte=0),
                name="usage_cost_non_negative",
                violation_error_message="cost_usd must be ≥ 0.",
            ),
        ]

    def __str__(self) -> str:
        return self.request_id


class RungSpend(models.Model):
    """Spend of one budget rung in one budget period: the sum of that period's usage events, kept as a
    counter so that a resolution reads its budgets in one small query whatever the volume of usage.

    Both period kinds are kept for every event (a day's and a month's counter), so that changing
    `budget_period` takes effect at once. The usage service adds to the counters in the transaction
    that inserts the events, with `UPDATE … SET spent_usd = spent_usd + x` (no lost update); the
    rare writes that change past events (imports, the admin) rebuild the periods they touch from the
    events (services.spend)."""

    period = models.CharField(max_length=8, choices=[("day", "day"), ("month", "month")])
    period_start = models.DateTimeField()
    rung = models.CharField(max_length=16, choices=BUDGET_RUNG_CHOICES)
    spent_usd = models.DecimalField(max_digits=20, decimal_places=6, default=Decimal(0))

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["period", "period_start", "rung"], name="rung_spend_unique"),
            models.CheckConstraint(
                condition=Q(rung__in=BUDGET_RUNGS),
                name="rung_spend_rung_valid",
                violation_error_message=f"rung must be one of: {', '.join(BUDGET_RUNGS)}.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rung} {self.period} of {self.period_start:%Y-%m-%d}: ${self.spent_usd}"


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
    budget_period = models.CharField(max_length=8, choices=BUDGET_PERIOD_CHOICES, default="month")
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
        existing = cls.objects.filter(pk=1).first()
        if existing is not None:
            return existing
        defaults = cls.from_settings()
        obj, _ = cls.objects.get_or_create(
            pk=1, defaults={key: getattr(defaults, key) for key in CONFIG_FIELDS}
        )
        return obj

    def config_values(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in CONFIG_FIELDS}

    def to_domain(self) -> LadderConfig:
        return build_config(self.config_values())


class StateVersion(models.Model):
    """Two counters. ``value``: bumped by every write of what a snapshot holds but the live state
    (services.bump_state_version); snapshots are cached by it. ``live``: bumped by every write of a
    connection's live state, its latest reading (with latches) or its cooldown, which also stamps
    the connection's ``live_seq`` (services.bump_live_version); a cached snapshot re-reads just
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


FAILURE_CLASS_CHOICES = [(value, value) for value in FAILURE_CLASSES]


class FailureEvent(models.Model):
    """An upstream failure reported by the gateway (or met by a poll), as classified by its adapter."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="failures")
    status = models.PositiveSmallIntegerField()
    classification = models.CharField(max_length=32, choices=FAILURE_CLASS_CHOICES)
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


class GatewayToken(models.Model):
    """A bearer token of the gateway API. Only its SHA-256 is stored; the value is shown once."""

    name = models.CharField(max_length=100, unique=True)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The first characters of the token, so operators can tell tokens apart without the secret.
    prefix = models.CharField(max_length=16, editable=False)
    scope_resolve = models.BooleanField(default=True)
    scope_report = models.BooleanField(default=True)
    # The connections this token may name (API.md: 403 connection_not_allowed for another); empty =
    # every connection. Ids, not foreign keys: deleting a connection must not widen a token to all.
    connection_ids = models.JSONField(
        default=list,
        blank=True,
        help_text='Connection ids this token may report on and read, e.g. ["claude-1", "codex-2"]; '
        "empty = every connection.",
    )
    spend_ceiling_usd = models.DecimalField(
        max_digits=16,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text="USD of budgeted (cheap and premium rung) usage this token may report per budget period; "
        "past it, its reports are refused. Empty = no ceiling.",
    )
    # Fetch ladder-owned access tokens and push gateway-owned ones (/api/v1/connections/{id}/credential).
    scope_credentials = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(spend_ceiling_usd__isnull=True) | Q(spend_ceiling_usd__gte=0),
                name="token_spend_ceiling_non_negative",
                violation_error_message="spend_ceiling_usd must be empty or ≥ 0.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def clean(self) -> None:
        message = connection_ids_errors(self.connection_ids)
        if message:
            raise ValidationError({"connection_ids": message})

    def allows_connection(self, connection_id: str | None) -> bool:
        return not self.connection_ids or connection_id in self.connection_ids


def connection_ids_errors(value: Any) -> str | None:
    """A readable message unless value is a list of connection ids (each in the id format)."""
    message = string_list_errors(value)
    if message:
        return f"connection_ids {message}; empty for every connection"
    bad = [item for item in value if not re.match(CONNECTION_ID_PATTERN, item)]
    if bad:
        return f"connection_ids: {', '.join(map(repr, bad))}: {CONNECTION_ID_MESSAGE}"
    return None


class CredentialAccess(models.Model):
    """One fetch or push of a connection's credential through the gateway API: who and when, never
    the value (issue 17)."""

    connection_id = models.CharField(max_length=64)
    token_name = models.CharField(max_length=100)
    action = models.CharField(max_length=8, choices=[("get", "get"), ("put", "put")])
    outcome = models.CharField(max_length=32)
    at = models.DateTimeField()

    class Meta:
        ordering: ClassVar[list[str]] = ["-at", "-id"]
        verbose_name_plural = "credential accesses"
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["connection_id", "-at"], name="credential_access_conn_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.token_name} {self.action} {self.connection_id} at {self.at:%Y-%m-%d %H:%M:%S}Z"


class Heartbeat(models.Model):
    """When a periodic process last ran (e.g. "beat": the refresh fan-out), for /readyz."""

    name = models.CharField(max_length=32, primary_key=True)
    last_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.last_at}"


class CatalogChange(models.Model):
    """One field of a billing catalog row changed by a person on the dashboard (who, when, old → new)."""

    # SET_NULL and a label: the history outlives a deleted row or user.
    entry = models.ForeignKey(
        BillingCatalogEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="changes"
    )
    entry_label = models.CharField(max_length=200)
    field = models.CharField(max_length=32)
    old_value = models.TextField(blank=True, default="")
    new_value = models.TextField(blank=True, default="")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    changed_by_name = models.CharField(max_length=150)
    changed_at = models.DateTimeField()

    class Meta:
        ordering: ClassVar[list[str]] = ["-changed_at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["-changed_at"], name="catalog_change_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_label} {self.field}: {self.old_value!r} → {self.new_value!r}"


ESCALATION_KINDS: tuple[str, ...] = ("up", "down", "empty")
ESCALATION_KIND_CHOICES = [(value, value) for value in ESCALATION_KINDS]
BOTH_RUNGS = Q(from_rung__isnull=False) & Q(to_rung__isnull=False)


class EscalationEvent(models.Model):
    """The rung that a gateway resolution of an auto id starts on changed from the previous one:
    it climbed (``up``), turned empty (``empty``) or came back down (``down``; empty → any rung is
    down). An audit trail for people and metrics only: routing never reads it (DESIGN L12)."""

    auto_id = models.CharField(max_length=64)
    from_rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)  # null: empty
    to_rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)  # null: empty
    kind = models.CharField(max_length=8, choices=ESCALATION_KIND_CHOICES)
    why = models.TextField(blank=True, default="")
    occurred_at = models.DateTimeField()

    class Meta:
        ordering: ClassVar[list[str]] = ["occurred_at", "id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["auto_id", "occurred_at"], name="escalation_auto_at_idx"),
            models.Index(fields=["occurred_at"], name="escalation_at_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=(Q(from_rung__isnull=True) | Q(from_rung__lte=4))
                & (Q(to_rung__isnull=True) | Q(to_rung__lte=4)),
                name="escalation_rung_range",
                violation_error_message="from_rung and to_rung must be empty or between 0 and 4.",
            ),
            models.CheckConstraint(
                # isnull guards: a comparison with NULL is unknown, and a CHECK passes on unknown.
                condition=(Q(kind="up") & BOTH_RUNGS & Q(from_rung__lt=F("to_rung")))
                | (Q(kind="empty") & Q(from_rung__isnull=False) & Q(to_rung__isnull=True))
                | (Q(kind="down") & Q(from_rung__isnull=True) & Q(to_rung__isnull=False))
                | (Q(kind="down") & BOTH_RUNGS & Q(from_rung__gt=F("to_rung"))),
                name="escalation_kind_matches_rungs",
                violation_error_message="kind must be up (to a higher rung), empty (to no rung) or down "
                "(to a lower rung, or from no rung).",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} {self.kind}: {rung_label(self.from_rung)} → {rung_label(self.to_rung)}"


class EscalationTally(models.Model):
    """How many escalation events of each auto id and kind the daily purge has deleted: what
    ``ladder_escalations_total`` adds to the events still stored, so that the counter never goes
    down when old events are purged."""

    auto_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=ESCALATION_KIND_CHOICES)
    purged = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["auto_id", "kind"], name="escalation_tally_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} {self.kind}: {self.purged} purged"


class EscalationState(models.Model):
    """The rung of the last gateway resolution of each auto id, as the escalation log saw it (null: the
    pool was empty). The log's memory, kept in the database when the rung changes so that the log
    stays right when Redis is away; routing never reads it (DESIGN L12)."""

    auto_id = models.CharField(max_length=64, primary_key=True)
    rung = models.PositiveSmallIntegerField(choices=RUNG_CHOICES, null=True, blank=True)
    changed_at = models.DateTimeField()

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(rung__isnull=True) | Q(rung__lte=4),
                name="escalation_state_rung_range",
                violation_error_message="rung must be empty or between 0 and 4.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.auto_id} on {rung_label(self.rung)}"


# Alerts (#20). A rule watches one kind of condition; each subject (a connection's window, an auto id,
# a rung budget, …) for which it holds is an episode, which fires once when it opens and sends one
# recovery when it closes. Channels carry the notifications; a delivery is one notification to one
# channel, with a stable id that every retry repeats.

ALERT_RULE_KIND_CHOICES = [(value, value) for value in RULE_KINDS]  # each described in ladder.domain.alerts
ALERT_CHANNEL_KIND_CHOICES = [(value, value) for value in ALERT_CHANNEL_KINDS]
ALERT_EVENT_CHOICES = [(value, value) for value in ALERT_EVENTS]
ALERT_DELIVERY_STATUS_CHOICES = [(value, value) for value in ALERT_DELIVERY_STATUSES]
ALERT_QUIET_PERIOD_DEFAULT_S = 900


class AlertChannel(models.Model):
    """Where notifications go: a generic webhook (JSON, HMAC-signed), a Slack- or Discord-compatible
    webhook, or e-mail through Django's mail settings."""

    name = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=ALERT_CHANNEL_KIND_CHOICES)
    url = models.URLField(max_length=500, blank=True, default="", help_text="Webhook kinds only.")
    # The webhook's HMAC secret, encrypted at rest like the connections' credentials.
    secret_ciphertext = models.TextField(blank=True, default="", editable=False)
    email_to = models.TextField(
        blank=True, default="", help_text="E-mail only: addresses separated by commas or new lines."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["name"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(kind__in=ALERT_CHANNEL_KINDS),
                name="alert_channel_kind_valid",
                violation_error_message=f"kind must be one of {', '.join(ALERT_CHANNEL_KINDS)}.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def secret(self) -> str:
        return decrypt_credential(self.secret_ciphertext) if self.secret_ciphertext else ""

    def set_secret(self, plaintext: str) -> None:
        self.secret_ciphertext = encrypt_credential(plaintext) if plaintext else ""

    def clean(self) -> None:
        """A webhook kind needs an http(s) url and no e-mail; e-mail needs valid addresses and no url;
        only the generic webhook signs, so only it has a secret."""
        errors: dict[str, str] = {}
        if self.kind in ALERT_WEBHOOK_KINDS:
            if not self.url:
                errors["url"] = f"A {self.kind} channel needs a url."
            elif not re.match(r"^https?://[^/\s]", self.url, flags=re.IGNORECASE):
                errors["url"] = "url must start with http:// or https://."
            if self.email_to.strip():
                errors["email_to"] = f"Only an email channel has addresses; a {self.kind} channel has a url."
        elif self.kind == "email":
            addresses = alert_email_addresses(self.email_to)
            bad = [address for address in addresses if not _valid_email(address)]
            if not addresses:
                errors["email_to"] = "An email channel needs at least one address in email_to."
            elif bad:
                errors["email_to"] = f"Not an e-mail address: {', '.join(bad)}."
            if self.url:
                errors["url"] = "An email channel has no url; its addresses go in email_to."
        if self.secret_ciphertext and self.kind != "webhook":
            errors["secret"] = "Only a generic webhook channel is signed with a secret."
        if errors:
            raise ValidationError(errors)


def _valid_email(address: str) -> bool:
    try:
        validate_email(address)
    except ValidationError:
        return False
    return True


class AlertRule(models.Model):
    """One kind of condition to alert on. ``target`` narrows it to one connection id, auto id or rung
    (empty: every subject); ``threshold`` is the kind's number (budget %: 50, 80, 100; minutes for
    readings_stale and beat_silent). No channels chosen: every enabled channel."""

    name = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=32, choices=ALERT_RULE_KIND_CHOICES)
    target = models.CharField(max_length=64, blank=True, default="")
    threshold = models.PositiveIntegerField(null=True, blank=True)
    quiet_period_s = models.PositiveIntegerField(
        default=ALERT_QUIET_PERIOD_DEFAULT_S,
        help_text="An episode of the same subject that opens within this many seconds of the last one "
        "closing continues it: no second alert.",
    )
    enabled = models.BooleanField(default=True)
    channels = models.ManyToManyField(AlertChannel, blank=True, related_name="rules")

    class Meta:
        ordering: ClassVar[list[str]] = ["kind", "name"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(kind__in=RULE_KINDS),
                name="alert_rule_kind_valid",
                violation_error_message=f"kind must be one of {', '.join(RULE_KINDS)}.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        self.target = (self.target or "").strip()
        errors = alert_rule_errors(
            kind=self.kind, target=self.target, threshold=self.threshold, quiet_period_s=self.quiet_period_s
        )
        if errors:
            raise ValidationError(errors)

    def to_domain(self) -> AlertRuleSpec:
        return AlertRuleSpec(
            id=self.pk,
            kind=self.kind,
            target=self.target,
            threshold=self.threshold,
            quiet_period_s=float(self.quiet_period_s),
        )


class AlertEpisode(models.Model):
    """One stretch of time during which a rule's condition held for one subject."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="episodes")
    subject = models.CharField(max_length=200)  # e.g. "claude-max/5h", "auto/subscription", "cheap"
    summary = models.TextField(blank=True, default="")  # the firing's words, for people
    detail = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()  # the condition was last seen holding
    closed_at = models.DateTimeField(null=True, blank=True)
    # When its recovery was sent: a closed episode waits its rule's quiet period for it, and continues
    # (re-opens, no second firing) if the condition comes back meanwhile (ladder.domain.alerts).
    recovered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-opened_at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["rule", "subject", "-opened_at"], name="alert_episode_subject_idx"),
            # What each evaluation reads: the episodes whose recovery is not sent yet.
            models.Index(
                fields=["rule", "subject"],
                condition=Q(recovered_at__isnull=True),
                name="alert_episode_unrecovered_idx",
            ),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["rule", "subject"],
                condition=Q(closed_at__isnull=True),
                name="alert_episode_one_open",
                violation_error_message="A rule has at most one open episode per subject.",
            ),
            models.CheckConstraint(
                condition=Q(recovered_at__isnull=True) | Q(closed_at__isnull=False),
                name="alert_episode_recovered_after_close",
                violation_error_message="An episode recovers only once it is closed.",
            ),
        ]

    def __str__(self) -> str:
        state = "open" if self.closed_at is None else "closed"
        return f"{self.rule} {self.subject} ({state})"


class AlertDelivery(models.Model):
    """One notification (fired, recovered or test) to one channel. ``delivery_id`` is stable: every
    retry sends the same id (a header and a body field), so that a receiver can drop a repeat."""

    delivery_id = models.UUIDField(unique=True)
    episode = models.ForeignKey(
        AlertEpisode, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16, choices=ALERT_EVENT_CHOICES)
    payload = models.JSONField(default=dict)  # built once, so that every retry sends the same body
    status = models.CharField(max_length=16, choices=ALERT_DELIVERY_STATUS_CHOICES, default="pending")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["status", "created_at"], name="alert_delivery_status_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["episode", "channel", "event"],
                condition=Q(episode__isnull=False),
                name="alert_delivery_once_per_event",
                violation_error_message="An episode's event is delivered to a channel once.",
            ),
            models.CheckConstraint(
                condition=Q(status__in=ALERT_DELIVERY_STATUSES) & Q(event__in=ALERT_EVENTS),
                name="alert_delivery_status_event_valid",
                violation_error_message="status or event is not one the ladder knows.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.channel} ({self.status})"
