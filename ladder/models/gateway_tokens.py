"""The gateway API's bearer tokens, and the log of the credentials they fetched or pushed."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from ladder.domain.types import CONNECTION_ID_PATTERN
from ladder.models.connections import CONNECTION_ID_MESSAGE
from ladder.models.fields import choices, string_list_errors


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
    action = models.CharField(max_length=8, choices=choices(("get", "put")))
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
