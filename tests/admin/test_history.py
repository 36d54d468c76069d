from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from ladder.models import EscalationEvent

pytestmark = pytest.mark.django_db


def test_it_keeps_the_escalation_log_read_only(admin_client: Client, rows: dict[str, Any]) -> None:
    event = rows["escalationevent"]
    change = reverse("admin:ladder_escalationevent_change", args=[event.pk])

    assert admin_client.get(reverse("admin:ladder_escalationevent_add")).status_code == 403
    assert admin_client.post(change, {"auto_id": "auto/other", "kind": "down"}).status_code == 403
    delete = reverse("admin:ladder_escalationevent_delete", args=[event.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    changelist = reverse("admin:ladder_escalationevent_changelist")
    bulk = {"action": "delete_selected", "_selected_action": [str(event.pk)], "post": "yes"}
    admin_client.post(changelist, bulk)
    assert EscalationEvent.objects.filter(pk=event.pk).exists()
    event.refresh_from_db()
    assert (event.auto_id, event.kind) == ("auto/thrifty", "up")
    assert "plan: quota_exhausted" in admin_client.get(change).content.decode()


@pytest.mark.parametrize("name", ["quotareading", "quotawindow"])
def test_it_keeps_readings_read_only_in_the_admin(
    admin_client: Client, rows: dict[str, Any], name: str
) -> None:
    row = rows[name]
    before = type(row).objects.count()
    change_url = reverse(f"admin:ladder_{name}_change", args=[row.pk])

    assert admin_client.get(reverse(f"admin:ladder_{name}_add")).status_code == 403
    assert admin_client.post(reverse(f"admin:ladder_{name}_add"), {}).status_code == 403
    page = admin_client.get(change_url)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert admin_client.post(change_url, {}).status_code == 403
    assert type(row).objects.count() == before
