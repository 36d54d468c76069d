from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from ladder.models import BillingCatalogEntry, ModelCatalogEntry

pytestmark = pytest.mark.django_db


def billing_row(
    provider: str = "acme", auth_type: str | None = None, **fields: object
) -> BillingCatalogEntry:
    values: dict[str, object] = {"billing": "subscription", "overage": "hard-stop", **fields}
    return BillingCatalogEntry(provider=provider, auth_type=auth_type, **values)


def test_it_refuses_a_second_provider_wide_row() -> None:
    billing_row().save()

    with pytest.raises(ValidationError, match="already has a provider-wide row"):
        billing_row().full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row().save()


def test_it_refuses_a_duplicate_after_auth_type_normalisation() -> None:
    billing_row(auth_type="oauth").save()

    with pytest.raises(ValidationError, match="provider and auth type already exists"):
        billing_row(auth_type="  OAuth ").full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row(auth_type=" OAUTH").save()


def test_it_allows_a_provider_wide_row_beside_auth_type_rows() -> None:
    billing_row().save()
    billing_row(auth_type="oauth").save()
    billing_row(auth_type="apikey").save()

    assert BillingCatalogEntry.objects.filter(provider="acme").count() == 3


def test_it_stores_an_empty_auth_type_as_provider_wide() -> None:
    row = billing_row(auth_type="   ")
    row.save()

    row.refresh_from_db()
    assert row.auth_type is None
    assert str(row) == "acme (provider-wide)"


def test_it_refuses_a_raw_write_of_a_non_normalised_auth_type() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        BillingCatalogEntry.objects.bulk_create([billing_row(auth_type="OAuth")])
    with pytest.raises(IntegrityError), transaction.atomic():
        BillingCatalogEntry.objects.bulk_create([billing_row(auth_type="")])


def test_it_refuses_an_unknown_billing_value() -> None:
    with pytest.raises(ValidationError, match="billing"):
        billing_row(billing="flat").full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row(billing="flat").save()


def test_it_refuses_an_unknown_model_category() -> None:
    entry = ModelCatalogEntry(provider="acme", model="m1", categories=["coding", "poetry"])

    with pytest.raises(ValidationError, match="poetry"):
        entry.full_clean()


def test_it_refuses_a_duplicate_model_entry() -> None:
    ModelCatalogEntry.objects.create(provider="acme", model="m1")

    with pytest.raises(IntegrityError), transaction.atomic():
        ModelCatalogEntry.objects.create(provider="acme", model="m1")


def test_it_refuses_a_negative_price() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        ModelCatalogEntry.objects.create(provider="acme", model="m1", input_usd_per_mtok=Decimal("-0.1"))
