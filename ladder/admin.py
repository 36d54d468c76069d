"""The operator's admin. Every save bumps the state version; a credential is write-only and never shown."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet, URLField
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from ladder import services
from ladder.domain.alerts import ALERT_WEBHOOK_KINDS
from ladder.domain.billing import BillingVerdict, classify_billing
from ladder.domain.credentials import NEEDS_REAUTH, default_owner, expires_in_text
from ladder.domain.tiers import economic_tier, rung_for, served_models
from ladder.domain.types import ModelEntry, Rung, Snapshot
from ladder.models import (
    AlertChannel,
    AlertDelivery,
    AlertEpisode,
    AlertRule,
    BillingCatalogEntry,
    Connection,
    EscalationEvent,
    FailureEvent,
    GatewayToken,
    LadderConfiguration,
    ModelCatalogEntry,
    QuotaReading,
    QuotaWindow,
    StateVersion,
    UsageEvent,
)
from ladder.models.connections import CREDENTIAL_OWNER_CHOICES
from ladder.models.gateway_tokens import connection_ids_errors
from ladder.selectors.snapshot import catalog_uncurated_kinds, configuration_get, snapshot_load
from ladder.services import credentials
from ladder.services.alert_delivery import enqueue_test
from ladder.services.alert_senders import redact_url
from ladder.services.credentials import (
    CREDENTIAL_FIELDS,
    ROTATING_OWNER_HELP,
    Credential,
    CredentialFileError,
    parse_credential_file,
)
from ladder.services.state import credential_problem
from ladder.services.tokens import gateway_token_issue, gateway_token_revoke

ListDisplay = tuple[str | Callable[[Any], str | bool], ...]
UNCURATED = "unknown — treated as metered (uncurated)"


class VersionBumpingAdmin(admin.ModelAdmin):
    """Admin writes are writes like any other: they invalidate cached snapshots."""

    formfield_overrides = {URLField: {"assume_scheme": "https"}}  # noqa: RUF012

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        services.bump_state_version()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        services.bump_state_version()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        services.bump_state_version()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if formsets:
            services.bump_state_version()


def verdict_text(verdict: BillingVerdict) -> str:
    if not verdict.curated:
        return UNCURATED
    text = f"{verdict.billing} · {verdict.overage}"
    if verdict.overage_source in ("observed", "override"):
        text += f" ({verdict.overage_source})"
    return text


def rungs_text(connection_id: str, snapshot: Snapshot) -> str:
    """The rung of each catalog model the connection serves, grouped by rung."""
    connection = snapshot.connections_by_id.get(connection_id)
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


def connection_rungs(obj: Connection, snapshot: Snapshot) -> str:
    return rungs_text(obj.pk, snapshot)


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


def https_url_formfield(field: Any, **kwargs: Any) -> Any:
    if isinstance(field, URLField):
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


# What workers write while an operator has the page open: the form keeps the values it showed (hidden
# initial inputs), so a field the operator did not touch counts as unchanged and is not written back.
LIVE_FIELDS = (
    "enabled",
    "disabled_reason",
    "cooldown_until",
    "backoff_level",
    "next_refresh_at",
    "claimed_until",
)
# What a new plain credential (typed, or cleared) writes: Connection.replace_credential's columns.
PLAIN_CREDENTIAL_FIELDS = [
    "credential_ciphertext",
    "refresh_ciphertext",
    "credential_expires_at",
    "enabled",
    "disabled_reason",
]


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
        fields = (  # never credential_ciphertext
            "id",
            "provider",
            "auth_type",
            "keyless",
            "enabled",
            "disabled_reason",
            "position",
            "models",
            "overage_override",
            "reserve_pct",
            "min_poll_interval_s",
            "base_url",
            "cooldown_until",
            "backoff_level",
            "next_refresh_at",
            "claimed_until",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in LIVE_FIELDS:
            if name in self.fields:
                self.fields[name].show_hidden_initial = True
        self.credential_columns: list[str] = []

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._clean_credential_file(cleaned)
        return self._clean_credential_pair(cleaned)

    def _clean_credential_file(self, cleaned: dict[str, Any]) -> None:
        """Parse a pasted CLI file (its kind from provider and auth type); errors name the field."""
        self.parsed_credential: Credential | None = None
        text = cleaned.get("credential_file") or ""
        owner = cleaned.get("credential_owner") or ""
        probe = Connection(provider=cleaned.get("provider") or "", auth_type=cleaned.get("auth_type"))
        kind = credentials.connection_kind(probe)
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

    def _clean_credential_pair(self, cleaned: dict[str, Any]) -> dict[str, Any]:
        if cleaned.get("credential") and cleaned.get("clear_credential"):
            self.add_error("clear_credential", "Either set a new credential or remove it, not both.")
        return cleaned

    def save(self, commit: bool = True) -> Connection:
        connection: Connection = super().save(commit=False)
        columns: list[str] = []
        if self.cleaned_data.get("clear_credential"):
            connection.replace_credential(None)
            columns += PLAIN_CREDENTIAL_FIELDS
        elif self.cleaned_data.get("credential"):
            connection.replace_credential(self.cleaned_data["credential"])
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
            if connection._state.adding:
                connection.save()
            else:
                connection.save(update_fields=self.update_fields())
            self.save_m2m()
        return connection

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
    ordering = ("position", "id")
    readonly_fields = (
        "credential_stored",
        "billing_verdict",
        "rungs",
        "latest_reading",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (
            None,
            {"fields": ("id", "provider", "auth_type", "keyless", "enabled", "disabled_reason", "position")},
        ),
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
        (
            "Routing",
            {
                "fields": (
                    "models",
                    "overage_override",
                    "reserve_pct",
                    "min_poll_interval_s",
                    "base_url",
                    "billing_verdict",
                    "rungs",
                )
            },
        ),
        (
            "Live state",
            {
                "fields": (
                    "latest_reading",
                    "cooldown_until",
                    "backoff_level",
                    "next_refresh_at",
                    "claimed_until",
                )
            },
        ),
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
        if change:
            obj.save(update_fields=form.update_fields())
        else:
            obj.save()
        services.bump_state_version()

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


@admin.register(BillingCatalogEntry)
class BillingCatalogEntryAdmin(VersionBumpingAdmin):
    list_display = (
        "provider",
        "auth_type_label",
        "billing",
        "overage",
        "reviewed_at",
        "seeded",
        "updated_at",
    )
    list_filter = ("billing", "overage", "provider")
    search_fields = ("provider", "auth_type", "notes")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="auth type", ordering="auth_type")
    def auth_type_label(self, obj: BillingCatalogEntry) -> str:
        return obj.auth_type or "(provider-wide)"

    @admin.display(description="from the seed", boolean=True)
    def seeded(self, obj: BillingCatalogEntry) -> bool:
        return bool(obj.seed_fingerprint)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        snapshot = snapshot_load()
        add_url = reverse("admin:ladder_billingcatalogentry_add")
        uncurated = [
            {
                "label": f"{provider}/{auth_type}" if auth_type else f"{provider} (no auth type)",
                "add_url": f"{add_url}?{urlencode({'provider': provider, 'auth_type': auth_type or ''})}",
            }
            for provider, auth_type in catalog_uncurated_kinds(snapshot=snapshot)
        ]
        context = {**(extra_context or {}), "uncurated_kinds": uncurated}
        return super().changelist_view(request, extra_context=context)


@admin.register(ModelCatalogEntry)
class ModelCatalogEntryAdmin(VersionBumpingAdmin):
    list_display = (
        "provider",
        "model",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "free",
        "categories",
        "position",
    )
    list_filter = ("provider", "free")
    search_fields = ("provider", "model")
    ordering = ("position", "id")
    readonly_fields = ("created_at", "updated_at")

    def get_list_display(self, request: HttpRequest) -> ListDisplay:
        config = cache(lambda: configuration_get().to_domain())

        @admin.display(description="economic tier (L2)")
        def tier(obj: ModelCatalogEntry) -> str:
            entry = ModelEntry(
                provider=obj.provider,
                model=obj.model,
                input_usd_per_mtok=None if obj.input_usd_per_mtok is None else float(obj.input_usd_per_mtok),
                free=obj.free,
            )
            return economic_tier(entry, config())

        return (*self.list_display[:5], tier, *self.list_display[5:])


class QuotaWindowInline(admin.TabularInline):
    model = QuotaWindow
    extra = 0
    fields = ("position", "name", "remaining_pct", "reset_at", "scope_models", "latched")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyHistoryMixin:
    """What the ladder records itself is never typed in the admin: a hand-made reading (readings come
    from polls, passive headers and failure reports) could be dated in the future or claim quota that
    is not there; a hand-made failure or escalation would falsify the history."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(QuotaReading)
class QuotaReadingAdmin(ReadOnlyHistoryMixin, VersionBumpingAdmin):
    list_display = ("connection", "fetched_at", "source", "verifiable", "observed_overage", "windows_summary")
    list_filter = ("source", "verifiable", "observed_overage", "connection__provider")
    search_fields = ("connection__id", "connection__provider", "note")
    list_select_related = ("connection",)
    ordering = ("-fetched_at", "-id")
    date_hierarchy = "fetched_at"
    inlines = (QuotaWindowInline,)
    readonly_fields = ("created_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[QuotaReading]:
        return super().get_queryset(request).prefetch_related("windows")

    @admin.display(description="windows")
    def windows_summary(self, obj: QuotaReading) -> str:
        return ", ".join(f"{w.name} {w.remaining_pct:g}%" for w in obj.windows.all()) or "none"


@admin.register(QuotaWindow)
class QuotaWindowAdmin(ReadOnlyHistoryMixin, VersionBumpingAdmin):
    list_display = ("reading", "name", "remaining_pct", "reset_at", "latched", "scope_models")
    list_filter = ("latched", "name", "reading__connection__provider")
    search_fields = ("name", "reading__connection__id")
    list_select_related = ("reading", "reading__connection")
    raw_id_fields = ("reading",)
    ordering = ("-reading__fetched_at", "position", "id")


@admin.register(UsageEvent)
class UsageEventAdmin(VersionBumpingAdmin):
    list_display = (
        "request_id",
        "occurred_at",
        "connection",
        "model",
        "rung",
        "budget_rung",
        "cost_usd",
        "input_tokens",
        "output_tokens",
    )
    list_filter = ("budget_rung", "rung", "connection__provider")
    search_fields = ("request_id", "model", "connection__id")
    list_select_related = ("connection",)
    raw_id_fields = ("connection", "token")
    ordering = ("-occurred_at", "-id")
    date_hierarchy = "occurred_at"
    readonly_fields = ("created_at",)


@admin.register(LadderConfiguration)
class LadderConfigurationAdmin(VersionBumpingAdmin):
    list_display = (
        "__str__",
        "exit_cutoff_pct",
        "reentry_min_remaining_pct",
        "max_reading_age_s",
        "budgets",
        "budget_period",
        "refresh_interval_s",
        "updated_at",
    )
    list_filter = ("budget_period",)
    search_fields = ("budget_period",)
    readonly_fields = ("updated_at",)

    @admin.display(description="rung budgets")
    def budgets(self, obj: LadderConfiguration) -> str:
        budgets = obj.rung_budget_usd or {}
        if not budgets:
            return "no budget"
        return ", ".join(f"{rung}: ${amount}" for rung, amount in budgets.items())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and not LadderConfiguration.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """There is one configuration: go straight to it (created from settings the first time)."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied  # before load(), which writes the row the first time
        configuration = LadderConfiguration.load()
        return HttpResponseRedirect(
            reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])
        )


@admin.register(StateVersion)
class StateVersionAdmin(admin.ModelAdmin):
    """Read-only: only services move the counter."""

    list_display = ("__str__", "value", "updated_at")
    list_filter = ("updated_at",)
    search_fields = ("value",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


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


@admin.register(FailureEvent)
class FailureEventAdmin(ReadOnlyHistoryMixin, admin.ModelAdmin):
    """Upstream failures as reported by the gateway or met by a poll: read-only history."""

    list_display = (
        "observed_at",
        "connection",
        "status",
        "classification",
        "window",
        "reset_at",
        "cooldown_until",
        "model",
        "source",
    )
    list_filter = ("classification", "source", "status", "connection__provider")
    search_fields = ("connection__id", "model", "window", "detail")
    list_select_related = ("connection",)
    ordering = ("-observed_at", "-id")
    date_hierarchy = "observed_at"


@admin.register(EscalationEvent)
class EscalationEventAdmin(ReadOnlyHistoryMixin, admin.ModelAdmin):
    """The escalation log: each change of the rung an auto id's pool starts on. Read-only history: only
    the daily purge deletes it (after LADDER_ESCALATION_RETENTION_DAYS, tallying what it deletes)."""

    list_display = ("occurred_at", "auto_id", "kind", "from_rung", "to_rung", "why")
    list_filter = ("kind", "auto_id")
    search_fields = ("auto_id", "why")
    ordering = ("-occurred_at", "-id")
    date_hierarchy = "occurred_at"

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class AlertChannelForm(ModelForm):
    secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Generic webhook only: the key of its webhook-signature (Standard Webhooks; a whsec_… "
        "secret is used base64-decoded). Write-only: never shown. Leave blank to keep it.",
    )
    clear_secret = forms.BooleanField(required=False, help_text="Remove the stored secret: send unsigned.")

    class Meta:
        model = AlertChannel
        fields = ("name", "kind", "url", "email_to", "enabled")  # never secret_ciphertext
        formfield_callback = https_url_formfield

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.url if self.instance.pk else ""
        if stored and "url" in self.fields:
            # Write-only like the secret: Slack's and Discord's webhook URLs hold their token in the path.
            self.initial["url"] = ""
            self.fields[
                "url"
            ].help_text = f"Stored: {redact_url(stored)} (the rest is not shown). Leave blank to keep it."

    def clean_url(self) -> str:
        url: str = self.cleaned_data.get("url") or ""
        stored = self.instance.url if self.instance.pk else ""
        if not url and stored and self.cleaned_data.get("kind") in ALERT_WEBHOOK_KINDS:
            return stored  # left blank: kept
        return url

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        secret, clear = cleaned.get("secret") or "", cleaned.get("clear_secret")
        if secret and clear:
            self.add_error("secret", "Either type a new secret or clear it, not both.")
        elif secret:
            self.instance.set_secret(secret)  # before the model's clean(), which checks the kind
        elif clear:
            self.instance.set_secret("")
        return cleaned


@admin.register(AlertChannel)
class AlertChannelAdmin(admin.ModelAdmin):
    """Where alerts go. A webhook's secret is write-only; a webhook URL is shown by its host only (Slack's
    and Discord's hold their token in the path). "Send a test" queues a test notification."""

    form = AlertChannelForm
    formfield_overrides = {URLField: {"assume_scheme": "https"}}  # noqa: RUF012
    list_display = ("name", "kind", "destination", "signed", "enabled")
    list_filter = ("kind", "enabled")
    search_fields = ("name",)
    fields = ("name", "kind", "url", "email_to", "secret", "clear_secret", "enabled")
    actions = ("send_test",)

    def get_fields(self, request: HttpRequest, obj: AlertChannel | None = None) -> Any:
        if obj is not None and not self.has_change_permission(request, obj):
            # Read-only, the admin would show the stored url whole: the host only, and no secret fields.
            return ("name", "kind", "destination", "email_to", "enabled")
        return super().get_fields(request, obj)

    @admin.display(description="sends to")
    def destination(self, obj: AlertChannel) -> str:
        return obj.email_to.replace("\n", ", ") if obj.kind == "email" else redact_url(obj.url)

    @admin.display(description="signed", boolean=True)
    def signed(self, obj: AlertChannel) -> bool:
        return bool(obj.secret_ciphertext)

    @admin.action(description="Send a test to the selected channels", permissions=["change"])
    def send_test(self, request: HttpRequest, queryset: QuerySet[AlertChannel]) -> None:
        now = timezone.now()
        sent = [enqueue_test(channel=channel, now=now) for channel in queryset]
        self.message_user(
            request,
            f"{len(sent)} test notification(s) queued; see Alert deliveries for the outcome.",
            messages.SUCCESS,
        )


@admin.register(AlertDelivery)
class AlertDeliveryAdmin(ReadOnlyHistoryMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "event",
        "channel",
        "episode",
        "status",
        "attempts",
        "sent_at",
        "last_error",
    )
    list_filter = ("status", "event", "channel")
    search_fields = ("delivery_id",)
    list_select_related = ("channel", "episode__rule")


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    """Alert rules (issue 20). AlertRule.clean() names the field at fault (a threshold the kind needs,
    out of range or not used; a target the kind cannot have), for the dashboard's form as well."""

    list_display = ("name", "kind", "target_shown", "threshold", "quiet_period_s", "enabled", "channel_names")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "target")
    filter_horizontal = ("channels",)
    fieldsets = (
        (None, {"fields": ("name", "kind", "enabled")}),
        (
            "Condition",
            {
                "fields": ("target", "threshold", "quiet_period_s"),
                "description": "target narrows the rule to one subject (empty: every one): a connection "
                "id for window, connection and readings rules, an auto id for auto_id_empty, cheap or "
                "premium for budget_crossed. threshold: % of the rung's budget for budget_crossed (1–1000), "
                "minutes for readings_stale and beat_silent (1–10080); the other kinds have none.",
            },
        ),
        ("Channels", {"fields": ("channels",), "description": "None chosen: every enabled channel."}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[AlertRule]:
        return super().get_queryset(request).prefetch_related("channels")

    @admin.display(description="target", ordering="target")
    def target_shown(self, obj: AlertRule) -> str:
        return obj.target or "every subject"

    @admin.display(description="channels")
    def channel_names(self, obj: AlertRule) -> str:
        return ", ".join(channel.name for channel in obj.channels.all()) or "every enabled channel"


@admin.register(AlertEpisode)
class AlertEpisodeAdmin(ReadOnlyHistoryMixin, admin.ModelAdmin):
    """What the rules saw: each stretch of time a rule's condition held for one subject. Read-only
    history, written by the evaluation (ladder.services.alerts)."""

    list_display = ("opened_at", "rule", "subject", "state", "closed_at", "recovered_at", "summary")
    list_filter = ("rule__kind", "rule")
    search_fields = ("subject", "summary", "rule__name")
    list_select_related = ("rule",)
    ordering = ("-opened_at", "-id")
    date_hierarchy = "opened_at"

    @admin.display(description="state")
    def state(self, obj: AlertEpisode) -> str:
        if obj.closed_at is None:
            return "open"
        return "recovered" if obj.recovered_at is not None else "closed (quiet period)"
