"""The billing and model catalogs' admin: uncurated connection kinds flagged, each model's economic tier."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from ladder.admin.base import ListDisplay, VersionBumpingAdmin
from ladder.domain.tiers import economic_tier
from ladder.domain.types import ModelEntry
from ladder.models import BillingCatalogEntry, ModelCatalogEntry
from ladder.selectors.snapshot import catalog_uncurated_kinds, configuration_get, snapshot_load, usd


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
        add_url = reverse("admin:ladder_billingcatalogentry_add")
        uncurated = [
            {
                "label": f"{provider}/{auth_type}" if auth_type else f"{provider} (no auth type)",
                "add_url": f"{add_url}?{urlencode({'provider': provider, 'auth_type': auth_type or ''})}",
            }
            for provider, auth_type in catalog_uncurated_kinds(snapshot=snapshot_load())
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
    readonly_fields = ("created_at", "updated_at")

    def get_list_display(self, request: HttpRequest) -> ListDisplay:
        config = cache(lambda: configuration_get().to_domain())

        @admin.display(description="economic tier (L2)")
        def tier(obj: ModelCatalogEntry) -> str:
            entry = ModelEntry(
                provider=obj.provider,
                model=obj.model,
                input_usd_per_mtok=usd(obj.input_usd_per_mtok),
                free=obj.free,
            )
            return economic_tier(entry, config())

        return (*self.list_display[:5], tier, *self.list_display[5:])
