"""Gateway tokens and failures in the admin: created with a value shown once, revocable."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from ladder import models as m
from ladder.services.tokens import gateway_token_create
from tests.gateway.conftest import Api, make_connection

pytestmark = pytest.mark.django_db

ADD = "/admin/ladder/gatewaytoken/add/"
LIST = "/admin/ladder/gatewaytoken/"


def shown_value(response: Any) -> str:
    messages = [str(message) for message in response.context["messages"]]
    found = [match.group(1) for text in messages if (match := re.search(r"(olr_[A-Za-z0-9_-]{20,})", text))]
    assert len(found) == 1, messages
    return found[0]


def test_it_creates_a_token_and_shows_its_value_once(admin_client: Client, client: Client) -> None:
    response = admin_client.post(ADD, {"name": "omniroute", "scope_resolve": "on"}, follow=True)

    value = shown_value(response)
    token = m.GatewayToken.objects.get(name="omniroute")
    assert token.token_hash == hashlib.sha256(value.encode()).hexdigest()
    assert (token.scope_resolve, token.scope_report) == (True, False)
    assert Api(client, value).get("/api/v1/connections").status_code == 200

    change = admin_client.get(f"/admin/ladder/gatewaytoken/{token.pk}/change/")
    listing = admin_client.get(LIST)
    for page in (change, listing):
        assert page.status_code == 200
        assert value not in page.content.decode()
        assert token.token_hash not in page.content.decode()
        assert token.prefix in page.content.decode()


def test_it_refuses_a_token_without_a_scope(admin_client: Client) -> None:
    response = admin_client.post(ADD, {"name": "useless"})

    assert response.status_code == 200
    assert "at least one scope" in response.content.decode()
    assert not m.GatewayToken.objects.exists()


def test_it_keeps_the_secret_when_scopes_are_edited(admin_client: Client) -> None:
    token, plaintext = gateway_token_create(name="gw")

    admin_client.post(f"/admin/ladder/gatewaytoken/{token.pk}/change/", {"name": "gw", "scope_report": "on"})

    token.refresh_from_db()
    assert (token.scope_resolve, token.scope_report) == (False, True)
    assert token.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()


def test_it_revokes_the_selected_tokens(admin_client: Client, client: Client) -> None:
    token, plaintext = gateway_token_create(name="gw")
    kept, kept_value = gateway_token_create(name="other")

    response = admin_client.post(
        LIST, {"action": "revoke_tokens", "_selected_action": [token.pk]}, follow=True
    )

    assert "1 token(s) revoked" in response.content.decode()
    assert m.GatewayToken.objects.get(pk=token.pk).revoked_at is not None
    assert m.GatewayToken.objects.get(pk=kept.pk).revoked_at is None
    assert Api(client, plaintext).get("/api/v1/connections").status_code == 401
    assert Api(client, kept_value).get("/api/v1/connections").status_code == 200


def test_it_lists_failures_read_only(admin_client: Client) -> None:
    make_connection("c1")
    event = m.FailureEvent.objects.create(
        connection_id="c1",
        status=429,
        classification="quota_exhausted",
        window="5h",
        observed_at=datetime(2026, 9, 15, 12, 0, tzinfo=UTC),
    )

    listing = admin_client.get("/admin/ladder/failureevent/")
    detail = admin_client.get(f"/admin/ladder/failureevent/{event.pk}/change/")

    assert listing.status_code == 200
    assert "quota_exhausted" in listing.content.decode()
    assert detail.status_code == 200
    assert admin_client.get("/admin/ladder/failureevent/add/").status_code == 403


def test_it_limits_a_token_to_connections_and_a_spend_ceiling(admin_client: Client) -> None:
    token, _ = gateway_token_create(name="gw")
    change = f"/admin/ladder/gatewaytoken/{token.pk}/change/"

    response = admin_client.post(
        change,
        {
            "name": "gw",
            "scope_report": "on",
            "connection_ids": "claude-1, codex-2\ncodex-2",
            "spend_ceiling_usd": "25",
        },
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert token.connection_ids == ["claude-1", "codex-2"]
    assert token.spend_ceiling_usd == Decimal("25")
    assert "claude-1, codex-2" in admin_client.get(change).content.decode()
    assert "claude-1, codex-2" in admin_client.get(LIST).content.decode()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("connection_ids", "ok-1, bad/id", "bad/id"), ("spend_ceiling_usd", "-1", "greater than or equal to 0")],
)
def test_it_refuses_a_bad_limit_naming_it(admin_client: Client, field: str, value: str, message: str) -> None:
    token, _ = gateway_token_create(name="gw")

    response = admin_client.post(
        f"/admin/ladder/gatewaytoken/{token.pk}/change/", {"name": "gw", "scope_report": "on", field: value}
    )

    assert response.status_code == 200
    assert message in response.content.decode()
    token.refresh_from_db()
    assert (token.connection_ids, token.spend_ceiling_usd) == ([], None)
