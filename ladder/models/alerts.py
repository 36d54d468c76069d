"""Alerts (issue 20). A rule watches one kind of condition; each subject (a connection's window, an auto
id, a rung budget, …) for which it holds is an episode, which fires once when it opens and sends one
recovery when it closes. Channels carry the notifications; a delivery is one notification to one
channel, with a stable id that every retry repeats."""

from __future__ import annotations

import re
from typing import ClassVar

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models
from django.db.models import Q

from ladder.domain.alerts import (
    ALERT_CHANNEL_KINDS,
    ALERT_DELIVERY_STATUSES,
    ALERT_EVENTS,
    ALERT_WEBHOOK_KINDS,
    RULE_KINDS,
    alert_email_addresses,
)
from ladder.domain.alerts import rule_errors as alert_rule_errors
from ladder.models.fields import choices
from ladder.security.crypto import decrypt_credential, encrypt_credential

ALERT_QUIET_PERIOD_DEFAULT_S = 900


class AlertChannel(models.Model):
    """Where notifications go: a generic webhook (JSON, HMAC-signed), a Slack- or Discord-compatible
    webhook, or e-mail through Django's mail settings."""

    name = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=choices(ALERT_CHANNEL_KINDS))
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
            errors["secret"] = "Only a generic webhook channel is signed with a secret."  # noqa: S105  (a message)
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
    kind = models.CharField(max_length=32, choices=choices(RULE_KINDS))
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
    event = models.CharField(max_length=16, choices=choices(ALERT_EVENTS))
    payload = models.JSONField(default=dict)  # built once, so that every retry sends the same body
    status = models.CharField(max_length=16, choices=choices(ALERT_DELIVERY_STATUSES), default="pending")
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
