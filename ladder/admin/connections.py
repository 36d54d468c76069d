"""The connections' admin: a credential is write-only and never shown; an edit writes only what it changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django import forms
from django.contrib import admin
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone

from ladder.admin.base import ListDisplay, VersionBumpingAdmin, https_url_formfield
from ladder.domain.billing import BillingVerdict, classify_billing
from ladder.domain.credentials import NEEDS_REAUTH, connection_kind, default_owner, expires_in_text
from ladder.domain.tiers import rung_for, served_models
from ladder.domain.types import Rung, Snapshot
from ladder.models import Connection
from ladder.models.connections import CREDENTIAL_OWNER_CHOICES, PLAIN_CREDENTIAL_FIELDS
from ladder.selectors.snapshot import snapshot_load
from ladder.services import credentials
from ladder.services.credentials import (
    CREDENTIAL_FIELDS,
    ROTATING_OWNER_HELP,
    Credential,
    CredentialFileError,
    parse_credential_file,
)
from ladder.services.state import bump_state_version, credential_problem

UNCURATED = "unknown — treated as metered (uncurated)"


def verdict_text(verdict: BillingVerdict) -> str:
    if not verdict.curated:
        return UNCURATED
    text = f"{verdict.billing} · {verdict.overage}"
    if verdict.overage_source in ("observed", "override"):
        text += f" ({verdict.overage_source})"
    return text


def connection_rungs(obj: Connection, snapshot: Snapshot) -> str:
    """The rung of each catalog model the connection serves, grouped by rung."""
    connection = snapshot.connections_by_id.get(obj.pk)
    if connection is None:
        return "—"
    verdict = classify_billing(connection, snapshot.catalog_by_key)
    served = served_models(connection, snapshot)
    if not served:
        return "no catalog model"
    groups: dict[Rung, list[str]] = {}
    for entry in served:
        groups.setdefault(rung_for(verdict.billing, entry, snapshot.config), []).append(entry.model)
    return "; ".join(
        f"{rung.value} {rung.label}: {', '.join(names)}" for rung, names in sorted(groups.items())
    )


def snapshot_columns(
    columns: Sequence[tuple[str, Callable[[Connection, Snapshot], str]]],
) -> list[Callable[[Connection], str]]:
    """list_display callables sharing one snapshot, loaded at the first cell (constant queries)."""
    snapshot = cache(snapshot_load)

    def column(title: str, render: Callable[[Connection, Snapshot], str]) -> Callable[[Connection], str]:
        def cell(obj: Connection) -> str:
            return render(obj, snapshot())

        cell.short_description = title  # type: ignore[attr-defined]
        return cell

    return [column(title, render) for title, render in columns]


def connection_billing(obj: Connection, snapshot: Snapshot) -> str:
    connection = snapshot.connections_by_id.get(obj.pk)
    return "—" if connection is None else verdict_text(classify_billing(connection, snapshot.catalog_by_key))


def connection_reading(obj: Connection, snapshot: Snapshot) -> str:
    connection = snapshot.connections_by_id.get(obj.pk)
    if connection is None or connection.reading is None:
        return "no reading"
    reading = connection.reading
    windows = ", ".join(
        f"{w.name} {w.remaining_pct:g}%" + (" (latched)" if w.latched else "") for w in reading.windows
    )
    state = "" if reading.verifiable else " unverifiable"
    return f"{reading.fetched_at:%Y-%m-%d %H:%M:%S}Z{state}: {windows or 'no window'}"


CREDENTIAL_FILE_HELP = (
    "Paste what the provider's CLI wrote: Claude ~/.claude/.credentials.json, Codex ~/.codex/auth.json, "
    "Gemini CLI ~/.gemini/oauth_creds.json, Antigravity its exported token JSON, Kiro "
    "~/.aws/sso/cache/kiro-auth-token.json (IdC: add clientId and clientSecret). The expiry and account "
    "are read from it; the tokens are stored encrypted and never shown. " + ROTATING_OWNER_HELP
)


def credential_summary(connection: Connection, now: datetime) -> str:
    """What the pages say about a credential: never the secret."""
    if not connection.has_credential:
        return "none"
    parts = ["stored (hidden)", f"owner {connection.credential_owner}"]
    if connection.credential_expires_at is not None or connection.credential_owner != "static":
        parts.append(expires_in_text(connection.credential_expires_at, now))
    if connection.credential_account_id:
        parts.append(f"account {connection.credential_account_id}")
    if connection.disabled_reason == NEEDS_REAUTH:
        parts.append("needs_reauth: log in again with the provider's CLI and paste the new file")
    return " · ".join(parts)


# The form's model fields (never credential_ciphertext), by the page's sections.
IDENTITY_FIELDS = ("id", "provider", "auth_type", "keyless", "enabled", "disabled_reason", "position")
ROUTING_FIELDS = ("models", "overage_override", "reserve_pct", "min_poll_interval_s", "base_url")
LIVE_STATE_FIELDS = ("cooldown_until", "backoff_level", "next_refresh_at", "claimed_until")
# What workers write while an operator has the page open: the form keeps the values it showed (hidden
# initial inputs), so a field the operator did not touch counts as unchanged and is not written back.
LIVE_FIELDS = ("enabled", "disabled_reason", *LIVE_STATE_FIELDS)


class ConnectionForm(ModelForm):
    credential = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: the stored credential is never shown. Leave blank to keep it.",
    )
    clear_credential = forms.BooleanField(required=False, help_text="Remove the stored credential.")
    credential_file = forms.CharField(
        required=False,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 6, "autocomplete": "off", "spellcheck": "false"}),
        help_text=CREDENTIAL_FILE_HELP,
    )
    credential_owner = forms.ChoiceField(
        required=False,
        choices=[("", "— choose —"), *CREDENTIAL_OWNER_CHOICES],
        help_text="Who refreshes this credential. Claude, Codex and Kiro have no default: choose. "
        + ROTATING_OWNER_HELP,
    )

    class Meta:
        model = Connection
        formfield_callback = https_url_formfield
        fields = (*IDENTITY_FIELDS, *ROUTING_FIELDS, *LIVE_STATE_FIELDS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in LIVE_FIELDS:
            if name in self.fields:
                self.fields[name].show_hidden_initial = True
        self.credential_columns: list[str] = []

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._clean_credential_file(cleaned)
        if cleaned.get("credential") and cleaned.get("clear_credential"):
            self.add_error("clear_credential", "Either set a new credential or remove it, not both.")
        return cleaned

    def _clean_credential_file(self, cleaned: dict[str, Any]) -> None:
        """Parse a pasted CLI file (its kind from provider and auth type); errors name the field."""
        self.parsed_credential: Credential | None = None
        text = cleaned.get("credential_file") or ""
        owner = cleaned.get("credential_owner") or ""
        probe = Connection(provider=cleaned.get("provider") or "", auth_type=cleaned.get("auth_type"))
        kind = connection_kind(probe)
        if not text:
            if owner == "ladder" and not self.instance.has_refresh_token:
                self.add_error(
                    "credential_owner", "The ladder needs a refresh token: paste the credential file."
                )
            return
        if cleaned.get("credential"):
            self.add_error("credential_file", "Either paste a credential file or a credential, not both.")
            return
        try:
            parsed = parse_credential_file(kind or "", text, now=timezone.now())
        except CredentialFileError as exc:
            self.add_error("credential_file", str(exc))
            return
        owner = owner or default_owner(kind) or ""
        problem = credentials.credential_owner_problem(kind, owner, parsed)
        if problem:
            self.add_error("credential_owner", problem)
            return
        cleaned["credential_owner"] = owner
        self.parsed_credential = parsed

    def clean_credential(self) -> str:
        value = (self.cleaned_data.get("credential") or "").strip()
        problem = credential_problem(value) if value else None
        if problem:
            raise forms.ValidationError(problem)
        return value

    def save(self, commit: bool = True) -> Connection:
        connection: Connection = super().save(commit=False)
        columns: list[str] = []
        cleared, typed = self.cleaned_data.get("clear_credential"), self.cleaned_data.get("credential")
        if cleared or typed:
            connection.replace_credential(None if cleared else typed)
            columns += PLAIN_CREDENTIAL_FIELDS
        owner = self.cleaned_data.get("credential_owner") or ""
        if self.parsed_credential is not None:
            credentials.credential_apply(
                connection=connection, credential=self.parsed_credential, owner=owner, now=timezone.now()
            )
            columns += CREDENTIAL_FIELDS
        elif owner and owner != connection.credential_owner:
            connection.credential_owner = owner
            columns.append("credential_owner")
            if owner != "ladder":
                connection.refresh_ciphertext = ""  # the ladder never redeems a token it does not own
                columns.append("refresh_ciphertext")
        self.credential_columns = columns
        if commit:
            self.write(connection)
            self.save_m2m()
        return connection

    def write(self, connection: Connection) -> None:
        """A new connection is inserted whole; an edit writes only what it changed (update_fields)."""
        if connection._state.adding:
            connection.save()
        else:
            connection.save(update_fields=self.update_fields())

    def update_fields(self) -> list[str]:
        """What saving an edit writes: the fields the operator changed, and the credential's columns
        only when the credential itself was set, cleared or handed to another owner. Nothing else:
        a refresh token a worker rotated after the page was loaded (or while this request ran) is
        never written back from the stale copy, nor a claim, a cooldown or a needs_reauth that the
        form merely showed (issue 17)."""
        columns = {field.name for field in Connection._meta.concrete_fields if not field.primary_key}
        edited = [name for name in self.changed_data if name in columns]
        return list(dict.fromkeys([*edited, *self.credential_columns, "updated_at"]))


@admin.register(Connection)
class ConnectionAdmin(VersionBumpingAdmin):
    form = ConnectionForm
    list_filter = ("provider", "auth_type", "enabled", "keyless", "overage_override")
    search_fields = ("id", "provider", "auth_type")
    readonly_fields = (
        "credential_stored",
        "billing_verdict",
        "rungs",
        "latest_reading",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": IDENTITY_FIELDS}),
        (
            "Credential",
            {
                "fields": (
                    "credential_stored",
                    "credential_file",
                    "credential_owner",
                    "credential",
                    "clear_credential",
                )
            },
        ),
        ("Routing", {"fields": (*ROUTING_FIELDS, "billing_verdict", "rungs")}),
        ("Live state", {"fields": ("latest_reading", *LIVE_STATE_FIELDS)}),
        ("History", {"fields": ("created_at", "updated_at")}),
    )

    def get_list_display(self, request: HttpRequest) -> ListDisplay:
        return (
            "id",
            "provider",
            "auth_type",
            "enabled",
            *snapshot_columns(
                [
                    ("billing", connection_billing),
                    ("rung per model", connection_rungs),
                    ("latest reading", connection_reading),
                ]
            ),
            "cooldown_until",
            "position",
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = tuple(super().get_readonly_fields(request, obj))
        return (*fields, "id") if obj is not None else fields

    def save_model(self, request: HttpRequest, obj: Connection, form: Any, change: bool) -> None:
        """An edit writes only what it changed (ConnectionForm.update_fields); never a full row."""
        form.write(obj)
        bump_state_version()

    @admin.display(description="credential")
    def credential_stored(self, obj: Connection) -> str:
        return credential_summary(obj, timezone.now())

    @admin.display(description="billing (L1)")
    def billing_verdict(self, obj: Connection) -> str:
        return connection_billing(obj, snapshot_load()) if obj.pk else "—"

    @admin.display(description="rung per model")
    def rungs(self, obj: Connection) -> str:
        return connection_rungs(obj, snapshot_load()) if obj.pk else "—"

    @admin.display(description="latest reading")
    def latest_reading(self, obj: Connection) -> str:
        return connection_reading(obj, snapshot_load()) if obj.pk else "—"
