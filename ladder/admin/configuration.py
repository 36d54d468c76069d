"""The one ladder configuration (its changelist goes straight to it) and the read-only state version."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from ladder.admin.base import ReadOnlyHistoryMixin, VersionBumpingAdmin
from ladder.models import LadderConfiguration, StateVersion


@admin.register(LadderConfiguration)
class LadderConfigurationAdmin(VersionBumpingAdmin):
    readonly_fields = ("updated_at",)

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
class StateVersionAdmin(ReadOnlyHistoryMixin, admin.ModelAdmin):
    """Read-only: only services move the counter."""

    list_display = ("__str__", "value", "updated_at")
    list_filter = ("updated_at",)
    search_fields = ("value",)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
