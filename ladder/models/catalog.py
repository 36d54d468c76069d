"""The catalogs: billing per provider and auth type (L1), models and their prices (L2), and the
history of the billing rows' edits."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from ladder.domain.billing import catalog_key_label, normalise_auth_type
from ladder.domain.types import BILLINGS, CATEGORIES, OVERAGES
from ladder.models.fields import AUTH_TYPE_HELP, auth_type_normalised, check_string_list, choices, one_of


class BillingCatalogEntry(models.Model):
    provider = models.CharField(max_length=64)
    auth_type = models.CharField(max_length=64, null=True, blank=True, help_text=AUTH_TYPE_HELP)  # noqa: DJ001
    billing = models.CharField(max_length=16, choices=choices(BILLINGS))
    overage = models.CharField(max_length=16, choices=choices(OVERAGES))
    source_url = models.URLField(max_length=500, null=True, blank=True)  # noqa: DJ001
    notes = models.TextField(blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    # Fingerprint of the curated fields when the seed last wrote the row ("" = never seeded). A row
    # whose fields no longer match it was edited by an operator, and a seed re-load keeps it.
    seed_fingerprint = models.CharField(max_length=64, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["provider", "auth_type"]
        verbose_name = "billing catalog entry"
        verbose_name_plural = "billing catalog"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["provider", "auth_type"],
                condition=Q(auth_type__isnull=False),
                name="billing_unique_provider_auth_type",
                violation_error_message="A billing row for this provider and auth type already exists.",
            ),
            models.UniqueConstraint(
                fields=["provider"],
                condition=Q(auth_type__isnull=True),
                name="billing_unique_provider_wide",
                violation_error_message="This provider already has a provider-wide row (no auth type).",
            ),
            auth_type_normalised("billing_auth_type_normalised"),
            one_of("billing", BILLINGS, "billing_billing_valid"),
            one_of("overage", OVERAGES, "billing_overage_valid"),
        ]

    def __str__(self) -> str:
        return catalog_key_label(self.provider, self.auth_type)

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.auth_type = normalise_auth_type(self.auth_type)


class ModelCatalogEntry(models.Model):
    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    input_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text="USD per million input tokens; empty = no price (premium).",
    )
    output_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, validators=[MinValueValidator(Decimal(0))]
    )
    free = models.BooleanField(default=False)
    categories = models.JSONField(default=list, blank=True, help_text=f"Any of: {', '.join(CATEGORIES)}.")
    position = models.IntegerField(default=0, help_text="Catalog order: lower first.")
    seed_fingerprint = models.CharField(max_length=64, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["position", "id"]
        verbose_name = "model catalog entry"
        verbose_name_plural = "model catalog"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["provider", "model"],
                name="model_catalog_unique_provider_model",
                violation_error_message="This provider already has this model in the catalog.",
            ),
            models.CheckConstraint(
                condition=Q(input_usd_per_mtok__isnull=True) | Q(input_usd_per_mtok__gte=0),
                name="model_catalog_input_price_non_negative",
                violation_error_message="input_usd_per_mtok must be ≥ 0.",
            ),
            models.CheckConstraint(
                condition=Q(output_usd_per_mtok__isnull=True) | Q(output_usd_per_mtok__gte=0),
                name="model_catalog_output_price_non_negative",
                violation_error_message="output_usd_per_mtok must be ≥ 0.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"

    def clean(self) -> None:
        check_string_list("categories", self.categories, allowed=CATEGORIES)


class CatalogChange(models.Model):
    """One field of a billing catalog row changed by a person on the dashboard (who, when, old → new)."""

    # SET_NULL and a label: the history outlives a deleted row or user.
    entry = models.ForeignKey(
        BillingCatalogEntry, on_delete=models.SET_NULL, null=True, blank=True, related_name="changes"
    )
    entry_label = models.CharField(max_length=200)
    field = models.CharField(max_length=32)
    old_value = models.TextField(blank=True, default="")
    new_value = models.TextField(blank=True, default="")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    changed_by_name = models.CharField(max_length=150)
    changed_at = models.DateTimeField()

    class Meta:
        ordering: ClassVar[list[str]] = ["-changed_at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["-changed_at"], name="catalog_change_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_label} {self.field}: {self.old_value!r} → {self.new_value!r}"
