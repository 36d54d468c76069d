"""A connection: one account of a provider, its encrypted credential, its routing settings and its live
state; and the check of a list of connection ids."""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from ladder.domain.billing import normalise_auth_type
from ladder.domain.credentials import CREDENTIAL_OWNERS
from ladder.domain.types import CONNECTION_ID_PATTERN, OVERAGES
from ladder.domain.windows import POLL_INTERVAL_MAX_S
from ladder.models.fields import AUTH_TYPE_HELP, auth_type_normalised, check_string_list, choices, one_of
from ladder.security.crypto import decrypt_credential, encrypt_credential

CREDENTIAL_OWNER_CHOICES = [
    ("ladder", "ladder: the ladder refreshes it"),
    ("gateway", "gateway: the gateway pushes each new access token"),
    ("static", "static: a key that does not expire"),
]
CONNECTION_ID_MESSAGE = (
    "Connection id must be 1–64 characters, each a letter, a digit, '.', '_', ':' or '-' "
    "(it is the gateway's own connection id)."
)


def validate_above_zero(value: float) -> None:
    """An exclusive minimum (Django's MinValueValidator includes its limit)."""
    if not value > 0:
        raise ValidationError("Ensure this value is greater than 0.", code="min_value")


# The disabled reasons that a new credential clears (DESIGN L7).
CREDENTIAL_REASONS = ("auth_failed", "needs_reauth")
# What a new plain credential (typed, or cleared) writes: Connection.replace_credential's columns.
PLAIN_CREDENTIAL_FIELDS = [
    "credential_ciphertext",
    "refresh_ciphertext",
    "credential_expires_at",
    "enabled",
    "disabled_reason",
]


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
    overage_override = models.CharField(max_length=16, choices=choices(OVERAGES), null=True, blank=True)  # noqa: DJ001
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
            auth_type_normalised("connection_auth_type_normalised"),
            one_of("overage_override", OVERAGES, "connection_overage_override_valid", nullable=True),
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
            one_of("credential_owner", CREDENTIAL_OWNERS, "connection_credential_owner_valid"),
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
            check_string_list("models", self.models, tail=", or null for every catalog model")

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
