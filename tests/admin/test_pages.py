from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

MODEL_NAMES = [
    "connection",
    "quotareading",
    "quotawindow",
    "usageevent",
    "billingcatalogentry",
    "modelcatalogentry",
    "ladderconfiguration",
    "stateversion",
    "escalationevent",
]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_renders_the_changelist_and_change_page(
    admin_client: Client, rows: dict[str, Any], name: str
) -> None:
    changelist = admin_client.get(reverse(f"admin:ladder_{name}_changelist"), follow=True)
    change = admin_client.get(reverse(f"admin:ladder_{name}_change", args=[rows[name].pk]))

    assert changelist.status_code == 200
    assert change.status_code == 200


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in MODEL_NAMES
        if n not in ("ladderconfiguration", "stateversion", "quotareading", "quotawindow", "escalationevent")
    ],
)
def test_it_renders_the_add_page(admin_client: Client, name: str) -> None:
    assert admin_client.get(reverse(f"admin:ladder_{name}_add")).status_code == 200
