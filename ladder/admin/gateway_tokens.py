"""The gateway API's tokens: the value is shown once, at creation; revoked rather than deleted."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone

from ladder.models import GatewayToken
from ladder.models.gateway_tokens import connection_ids_errors
from ladder.services.tokens import gateway_token_issue, gateway_token_revoke


class GatewayTokenForm(ModelForm):
    # Typed as ids separated by commas or spaces rather than as JSON; stored as a list.
    connection_ids = forms.CharField(
        required=False,
        label="Connections",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Connection ids this token may report on and read, separated by commas or spaces "
        "(any other one is refused with 403 connection_not_allowed). Empty: every connection.",
    )

    class Meta:
        model = GatewayToken
        fields = (
            "name",
            "scope_resolve",
            "scope_report",
            "scope_credentials",
            "connection_ids",
            "spend_ceiling_usd",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial["connection_ids"] = ", ".join(self.instance.connection_ids or [])

    def clean_connection_ids(self) -> list[str]:
        raw = self.cleaned_data.get("connection_ids") or ""
        ids = list(dict.fromkeys(part for part in re.split(r"[\s,]+", raw) if part))
        message = connection_ids_errors(ids)
        if message:
            raise forms.ValidationError(message)
        return ids

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not (
            cleaned.get("scope_resolve") or cleaned.get("scope_report") or cleaned.get("scope_credentials")
        ):
            raise forms.ValidationError(
                "A gateway token needs at least one scope: resolve, report, credentials."
            )
        return cleaned


@admin.register(GatewayToken)
class GatewayTokenAdmin(admin.ModelAdmin):
    """Tokens of the gateway API. The value is generated at creation and shown once, in a message;
    only its SHA-256 is stored. Revoke rather than delete, so that last_used_at stays visible."""

    form = GatewayTokenForm
    list_display = (
        "name",
        "prefix_shown",
        "scope_resolve",
        "scope_report",
        "scope_credentials",
        "connections",
        "spend_ceiling_usd",
        "created_at",
        "last_used_at",
        "status",
    )
    list_filter = (
        "scope_resolve",
        "scope_report",
        "scope_credentials",
        ("revoked_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("name", "prefix")
    readonly_fields = ("prefix_shown", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_tokens",)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The form's fields; a saved token also shows its prefix and times."""
        name, *editable = GatewayTokenForm.Meta.fields
        if obj is None:
            return (name, *editable)
        return (name, "prefix_shown", *editable, "created_at", "last_used_at", "revoked_at")

    @admin.display(description="token starts with")
    def prefix_shown(self, obj: GatewayToken) -> str:
        return f"{obj.prefix}…" if obj.prefix else "—"

    @admin.display(description="connections")
    def connections(self, obj: GatewayToken) -> str:
        return ", ".join(obj.connection_ids) if obj.connection_ids else "all"

    @admin.display(description="status")
    def status(self, obj: GatewayToken) -> str:
        return f"revoked {obj.revoked_at:%Y-%m-%d %H:%M}" if obj.revoked_at else "active"

    def save_model(self, request: HttpRequest, obj: GatewayToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        plaintext = gateway_token_issue(obj)
        messages.warning(
            request,
            f"Gateway token “{obj.name}”: {plaintext} — copy it now, it is not shown again "
            "(only its hash is stored).",
        )

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[GatewayToken]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        revoked = gateway_token_revoke(token_ids=ids, now=timezone.now())
        self.message_user(request, f"{revoked} token(s) revoked.", messages.SUCCESS)
