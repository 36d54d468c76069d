"""What the ladder records itself (readings, failures, usage, escalations): read-only history but usage."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from ladder.admin.base import ReadOnlyHistoryMixin, VersionBumpingAdmin
from ladder.models import EscalationEvent, FailureEvent, QuotaReading, QuotaWindow, UsageEvent


class QuotaWindowInline(ReadOnlyHistoryMixin, admin.TabularInline):
    model = QuotaWindow
    extra = 0
    fields = ("position", "name", "remaining_pct", "reset_at", "scope_models", "latched")


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
