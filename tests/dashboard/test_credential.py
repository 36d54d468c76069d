"""The connection page's credential: paste a CLI file, see owner and expiry, never the secret; a
needs_reauth connection says what to do."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from tests.dashboard.factories import editor_create, reading_add, user_create

pytestmark = pytest.mark.django_db

ACCESS = "sk-ant-oat01-ACCESS-secret-0123456789"
REFRESH = "sk-ant-ort01-REFRESH-secret-0123456789"


def claude_connection() -> m.Connection:
    connection = m.Connection(id="claude-1", provider="claude", auth_type="oauth")
    connection.save()
    reading_add("claude-1", {"5h": 50.0})
    return connection


def claude_file(hours: float = 5) -> str:
    expires_ms = int((timezone.now() + timedelta(hours=hours, minutes=1)).timestamp() * 1000)
    return json.dumps(
        {"claudeAiOauth": {"accessToken": ACCESS, "refreshToken": REFRESH, "expiresAt": expires_ms}}
    )


def page_url() -> str:
    return reverse("ladder:connection_page", args=["claude-1"])


def post_url() -> str:
    return reverse("ladder:connection_cli_file", args=["claude-1"])


def test_it_stores_a_pasted_file_and_shows_expiry_and_owner(client: Client) -> None:
    claude_connection()
    client.force_login(editor_create())

    response = client.post(
        post_url(), {"credential_file": claude_file(), "credential_owner": "ladder"}, follow=True
    )

    body = response.content.decode()
    assert "Credential stored (owner ladder)" in body
    assert "owner <b>ladder</b> · expires in 5 h" in body
    assert "log in once more for the ladder" in body
    assert ACCESS not in body
    assert REFRESH not in body
    row = m.Connection.objects.get(pk="claude-1")
    assert row.get_credential() == ACCESS


def test_it_names_the_field_of_a_bad_file_and_asks_for_the_owner(client: Client) -> None:
    claude_connection()
    client.force_login(editor_create())
    bad = json.dumps({"claudeAiOauth": {"accessToken": ACCESS, "expiresAt": "soon"}})

    response = client.post(post_url(), {"credential_file": bad, "credential_owner": "gateway"}, follow=True)
    body = response.content.decode()
    assert "claudeAiOauth.expiresAt: expected a number of milliseconds" in body
    assert ACCESS not in body

    response = client.post(post_url(), {"credential_file": claude_file()}, follow=True)
    assert "Choose who refreshes this claude-oauth credential" in response.content.decode()
    assert not m.Connection.objects.get(pk="claude-1").has_credential


def test_a_viewer_cannot_set_a_credential(client: Client) -> None:
    claude_connection()
    client.force_login(user_create("viewer"))

    response = client.post(post_url(), {"credential_file": claude_file(), "credential_owner": "ladder"})

    assert response.status_code == 403
    assert "credential_file" not in client.get(page_url()).content.decode()


def test_it_says_what_to_do_when_the_refresh_token_was_refused(client: Client) -> None:
    claude_connection()
    m.Connection.objects.filter(pk="claude-1").update(enabled=False, disabled_reason="needs_reauth")
    client.force_login(editor_create())

    body = client.get(page_url()).content.decode()

    assert "needs_reauth: the provider refused the refresh token" in body
    assert "Log in again with the provider's CLI" in body
    assert "Window <b>5h</b> 50%" in body  # the last reading stays
