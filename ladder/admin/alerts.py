"""Alert channels (a secret and a webhook URL's path are write-only), rules, episodes and deliveries."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet, URLField
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone

from ladder.admin.base import ReadOnlyHistoryMixin, https_url_formfield
from ladder.domain.alerts import ALERT_WEBHOOK_KINDS
from ladder.models import AlertChannel, AlertDelivery, AlertEpisode, AlertRule
from ladder.security.logredact import redact_url
from ladder.services.alert_delivery import enqueue_test


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
    date_hierarchy = "opened_at"

    @admin.display(description="state")
    def state(self, obj: AlertEpisode) -> str:
        if obj.closed_at is None:
            return "open"
        return "recovered" if obj.recovered_at is not None else "closed (quiet period)"
