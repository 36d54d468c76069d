"""The alert channels' admin: a write-only secret, errors naming the field, "send a test"."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from ladder import models as m
from ladder.services import alert_delivery
from tests.dashboard.factories import user_create

pytestmark = pytest.mark.django_db

ADD = "admin:ladder_alertchannel_add"


def form(**overrides: str) -> dict[str, str]:
    return {"name": "ops", "kind": "webhook", "url": "https://hooks.example.com/ladder", "email_to": "",
            "secret": "", "enabled": "on"} | overrides  # fmt: skip


def test_it_stores_the_secret_encrypted_and_never_shows_it(admin_client: Client) -> None:
    response = admin_client.post(reverse(ADD), form(secret="s3cret-value-123"))
    assert response.status_code == 302
    channel = m.AlertChannel.objects.get(name="ops")
    assert channel.secret == "s3cret-value-123"
    assert "s3cret-value-123" not in channel.secret_ciphertext
    change = admin_client.get(reverse("admin:ladder_alertchannel_change", args=[channel.pk]))
    assert change.status_code == 200
    assert b"s3cret-value-123" not in change.content
    # Saved again with the secret left blank: kept.
    admin_client.post(reverse("admin:ladder_alertchannel_change", args=[channel.pk]), form(name="ops"))
    channel.refresh_from_db()
    assert channel.secret == "s3cret-value-123"


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"url": ""}, "url", "needs a url"),
        ({"kind": "email", "url": "", "email_to": "nobody"}, "email_to", "Not an e-mail address: nobody"),
        ({"kind": "slack", "secret": "abc"}, "secret", "Only a generic webhook"),
    ],
)
def test_it_names_the_field_at_fault(
    admin_client: Client, overrides: dict[str, str], field: str, words: str
) -> None:
    response = admin_client.post(reverse(ADD), form(**overrides))
    assert response.status_code == 200
    assert words in " ".join(response.context["adminform"].form.errors[field])
    assert not m.AlertChannel.objects.exists()


def test_it_queues_a_test_for_each_selected_channel(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    sent: list[int] = []

    def record(pks: list[int], **kwargs: Any) -> list[int]:
        sent.extend(pks)
        return list(pks)

    monkeypatch.setattr(alert_delivery, "deliveries_queue", record)
    channel = m.AlertChannel.objects.create(name="ops", kind="webhook", url="https://hooks.example.com/x")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:ladder_alertchannel_changelist"),
            {"action": "send_test", "_selected_action": [channel.pk]},
            follow=True,
        )
    assert response.status_code == 200
    delivery = m.AlertDelivery.objects.get()
    assert (delivery.event, delivery.channel, delivery.episode) == ("test", channel, None)
    assert sent == [delivery.pk]
    listing = admin_client.get(reverse("admin:ladder_alertdelivery_changelist"))
    assert listing.status_code == 200
    assert admin_client.get(reverse("admin:ladder_alertdelivery_add")).status_code == 403


SLACK = "https://hooks.slack.example/services/T000/B000/secret-token"


def test_the_change_page_never_shows_a_webhook_url_s_path(admin_client: Client) -> None:
    """Slack's and Discord's webhook URLs hold their token in the path: the page shows the host only."""
    channel = m.AlertChannel.objects.create(name="ops", kind="slack", url=SLACK)
    change = reverse("admin:ladder_alertchannel_change", args=[channel.pk])
    page = admin_client.get(change)
    assert page.status_code == 200
    assert b"secret-token" not in page.content
    assert b"https://hooks.slack.example/" in page.content
    # Saved again with the url left blank: kept; a new one replaces it.
    assert admin_client.post(change, form(name="ops-2", kind="slack", url="")).status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.url) == ("ops-2", SLACK)
    admin_client.post(change, form(name="ops-2", kind="slack", url="https://hooks.slack.example/new"))
    channel.refresh_from_db()
    assert channel.url == "https://hooks.slack.example/new"


def test_a_view_only_user_sees_the_host_only(client: Client) -> None:
    channel = m.AlertChannel.objects.create(name="ops", kind="slack", url=SLACK)
    client.force_login(user_create("watcher", staff=True, perms=("view_alertchannel",)))
    page = client.get(reverse("admin:ladder_alertchannel_change", args=[channel.pk]))
    assert page.status_code == 200
    assert b"secret-token" not in page.content
