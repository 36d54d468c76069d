from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from ladder.models import BillingCatalogEntry, Connection

pytestmark = pytest.mark.django_db


def test_it_flags_uncurated_kinds_in_the_billing_catalog(admin_client: Client) -> None:
    Connection.objects.create(id="q1", provider="qwen", auth_type="oauth")
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")

    body = admin_client.get(reverse("admin:ladder_billingcatalogentry_changelist")).content.decode()

    assert 'class="uncurated-kind">qwen/oauth' in body
    assert "treated as metered" in body
    assert "claude/oauth —" not in body
    assert "provider=qwen&amp;auth_type=oauth" in body


def test_it_shows_no_uncurated_flag_when_everything_is_curated(admin_client: Client) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")

    body = admin_client.get(reverse("admin:ladder_billingcatalogentry_changelist")).content.decode()

    assert "uncurated-kind" not in body


def test_it_shows_a_duplicate_billing_row_after_normalisation(admin_client: Client) -> None:
    response = admin_client.post(
        reverse("admin:ladder_billingcatalogentry_add"),
        {
            "provider": "claude",
            "auth_type": "  OAuth ",
            "billing": "metered",
            "overage": "unknown",
            "notes": "",
        },
    )

    assert response.status_code == 200
    assert "A billing row for this provider and auth type already exists." in response.content.decode()
    assert BillingCatalogEntry.objects.filter(provider="claude").count() == 1
