from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.admin.connections import ConnectionForm
from ladder.models import Connection, QuotaReading, QuotaWindow
from ladder.selectors.snapshot import snapshot_load, state_version_get
from ladder.services.credential_refresh import credential_refresh
from ladder.services.credentials import credential_import
from tests.admin.conftest import NOW, SECRET, connection_form

pytestmark = pytest.mark.django_db


def test_it_never_shows_a_credential(admin_client: Client, rows: dict[str, Any]) -> None:
    connection = rows["connection"]
    urls = [
        reverse("admin:ladder_connection_changelist"),
        reverse("admin:ladder_connection_change", args=[connection.pk]),
        reverse("admin:ladder_connection_history", args=[connection.pk]),
        reverse("admin:ladder_connection_delete", args=[connection.pk]),
        reverse("admin:ladder_quotareading_change", args=[rows["quotareading"].pk]),
        reverse("admin:ladder_usageevent_change", args=[rows["usageevent"].pk]),
    ]
    admin_client.post(
        reverse("admin:ladder_connection_change", args=[connection.pk]), connection_form(position="3")
    )

    for url in urls:
        body = admin_client.get(url).content.decode()
        assert SECRET not in body, url
        assert connection.credential_ciphertext not in body, url
    assert "stored (hidden)" in admin_client.get(urls[1]).content.decode()


def test_it_keeps_the_credential_when_the_field_is_left_blank(
    admin_client: Client, rows: dict[str, Any]
) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    response = admin_client.post(url, connection_form(position="7"))

    assert response.status_code == 302
    stored = Connection.objects.get(pk=rows["connection"].pk)
    assert stored.position == 7
    assert stored.get_credential() == SECRET


def test_it_sets_a_new_credential_and_bumps_the_version(admin_client: Client, rows: dict[str, Any]) -> None:
    before = state_version_get()
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    response = admin_client.post(url, connection_form(credential="sk-new-one"))

    assert response.status_code == 302
    assert Connection.objects.get(pk=rows["connection"].pk).get_credential() == "sk-new-one"
    assert state_version_get() > before


def test_it_clears_the_credential_on_request(admin_client: Client, rows: dict[str, Any]) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    admin_client.post(url, connection_form(clear_credential="on"))

    assert Connection.objects.get(pk=rows["connection"].pk).get_credential() is None


def test_it_shows_a_bad_connection_id_error(admin_client: Client) -> None:
    response = admin_client.post(reverse("admin:ladder_connection_add"), connection_form(id="bad id/1"))

    assert response.status_code == 200
    assert "each a letter, a digit" in response.content.decode()
    assert not Connection.objects.exists()


def test_it_shows_billing_and_rungs_in_the_connection_list(admin_client: Client) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    Connection.objects.create(id="q1", provider="qwen", auth_type="oauth")
    Connection.objects.create(id="or1", provider="openrouter", auth_type="apikey")

    body = admin_client.get(reverse("admin:ladder_connection_changelist")).content.decode()

    assert "subscription · hard-stop" in body
    assert "0 subscription: claude-opus-4-1, claude-sonnet-4-5, claude-haiku-4-5" in body
    assert "unknown — treated as metered (uncurated)" in body
    assert "2 free: deepseek/deepseek-chat-v3.1:free; 3 cheap: openai/gpt-5-mini; 4 premium:" in body


def test_it_lists_connections_in_a_constant_number_of_queries(admin_client: Client) -> None:
    url = reverse("admin:ladder_connection_changelist")

    def count_queries(total: int) -> int:
        for index in range(Connection.objects.count(), total):
            connection = Connection.objects.create(id=f"c{index}", provider="claude", auth_type="oauth")
            reading = QuotaReading.objects.create(connection=connection, fetched_at=NOW)
            QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=50)
        with CaptureQueriesContext(db_connection) as queries:
            assert admin_client.get(url).status_code == 200
        return len(queries)

    assert count_queries(5) == count_queries(50)


def test_it_strips_the_credential_entered_in_the_admin(admin_client: Client, rows: dict[str, Any]) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    response = admin_client.post(url, connection_form(credential="  sk-new-one\n"))

    assert response.status_code == 302
    assert Connection.objects.get(pk=rows["connection"].pk).get_credential() == "sk-new-one"


def test_it_refuses_a_credential_with_a_control_character_in_the_admin(
    admin_client: Client, rows: dict[str, Any]
) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    response = admin_client.post(url, connection_form(credential="sk-new\none"))

    assert response.status_code == 200
    assert "control character" in response.content.decode()
    assert Connection.objects.get(pk=rows["connection"].pk).get_credential() == SECRET


@pytest.mark.parametrize(("typed", "stored"), [("", None), ("[]", []), ('["m1"]', ["m1"])])
def test_it_stores_the_models_field_as_typed(admin_client: Client, typed: str, stored: Any) -> None:
    # Empty: every catalog model of the provider; []: none. An imported [] survives an edit in the admin.
    response = admin_client.post(
        reverse("admin:ladder_connection_add"), connection_form(id="c-models", models=typed)
    )
    assert response.status_code == 302, response.content[:2000]
    assert Connection.objects.get(pk="c-models").models == stored

    page = admin_client.get(reverse("admin:ladder_connection_change", args=["c-models"]))
    edited = admin_client.post(
        reverse("admin:ladder_connection_change", args=["c-models"]),
        connection_form(id="c-models", models=page.context["adminform"].form["models"].value(), enabled=""),
    )
    assert edited.status_code == 302, edited.content[:2000]
    assert Connection.objects.get(pk="c-models").models == stored


def test_it_saves_a_reserve_and_a_minimum_poll_interval(admin_client: Client) -> None:
    response = admin_client.post(
        reverse("admin:ladder_connection_add"),
        connection_form(id="c-reserve", reserve_pct="20", min_poll_interval_s="300"),
    )

    assert response.status_code == 302, response.content[:2000]
    row = Connection.objects.get(pk="c-reserve")
    assert (row.reserve_pct, row.min_poll_interval_s) == (20.0, 300.0)
    assert snapshot_load().connections_by_id["c-reserve"].reserve_pct == 20.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reserve_pct", "100.5"),
        ("reserve_pct", "-1"),
        ("min_poll_interval_s", "0"),
        ("min_poll_interval_s", "90000"),
    ],
)
def test_it_shows_reserve_and_poll_interval_errors(admin_client: Client, field: str, value: str) -> None:
    response = admin_client.post(
        reverse("admin:ladder_connection_add"), connection_form(id="c-bad", **{field: value})
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors or any(field in str(e) for e in errors.get("__all__", [])), errors
    assert not Connection.objects.filter(pk="c-bad").exists()


# --- credential files (issue 17) -------------------------------------------------------------


def claude_file(expires_at: datetime, access: str = "sk-ant-oat01-ACCESS-secret-abcdef") -> str:
    return json.dumps(
        {
            "claudeAiOauth": {
                "accessToken": access,
                "refreshToken": "sk-ant-ort01-REFRESH-secret-abcdef",
                "expiresAt": int(expires_at.timestamp() * 1000),
                "scopes": ["user:inference"],
            }
        }
    )


def test_it_stores_a_pasted_cli_file_and_shows_expiry_never_the_secret(
    admin_client: Client, rows: dict[str, Any]
) -> None:
    connection = rows["connection"]
    url = reverse("admin:ladder_connection_change", args=[connection.pk])
    expires_at = timezone.now() + timedelta(hours=3, minutes=5)

    response = admin_client.post(
        url, connection_form(credential_file=claude_file(expires_at), credential_owner="ladder")
    )

    assert response.status_code == 302
    stored = Connection.objects.get(pk=connection.pk)
    assert stored.get_credential() == "sk-ant-oat01-ACCESS-secret-abcdef"
    assert stored.has_refresh_token
    assert stored.credential_owner == "ladder"
    page = admin_client.get(url).content.decode()
    assert "expires in 3 h" in page
    assert "owner ladder" in page
    assert "ACCESS-secret" not in page
    assert "REFRESH-secret" not in page
    assert "log in once more for the ladder" in page


def test_it_asks_who_owns_a_rotating_credential(admin_client: Client, rows: dict[str, Any]) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])

    response = admin_client.post(
        url, connection_form(credential_file=claude_file(timezone.now() + timedelta(hours=1)))
    )

    assert response.status_code == 200
    assert "Choose who refreshes this claude-oauth credential" in response.content.decode()
    assert Connection.objects.get(pk=rows["connection"].pk).get_credential() == SECRET


def test_it_names_the_field_of_a_bad_pasted_file(admin_client: Client, rows: dict[str, Any]) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows["connection"].pk])
    bad = json.dumps({"claudeAiOauth": {"accessToken": "a-secret", "expiresAt": "soon"}})

    response = admin_client.post(url, connection_form(credential_file=bad, credential_owner="gateway"))

    assert response.status_code == 200
    assert "claudeAiOauth.expiresAt: expected a number of milliseconds" in response.content.decode()
    stored = Connection.objects.get(pk=rows["connection"].pk)
    assert (stored.get_credential(), stored.credential_owner) == (SECRET, "static")


# --- stale forms never write back a rotated credential (issue 17) ------------------------------


def ladder_owned(upstream: FakeUpstream, control: FakeUpstreamControl) -> tuple[str, dict[str, Any]]:
    base_url = upstream.url_for("claude-oauth", "c1")
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth", base_url=base_url)
    minted = control.mint_login("claude-oauth", lifetime_s=600)
    credential_import(connection_id="c1", text=json.dumps(minted["file"]), owner="ladder")
    return base_url, minted


def rotate(connection_id: str) -> None:
    """A worker's refresh: the single-use refresh token is redeemed and the rotated one written back."""
    with httpx.Client() as http:
        assert credential_refresh(connection_id=connection_id, client=http, force=True).outcome == "refreshed"


def test_it_keeps_a_refresh_token_rotated_while_the_form_is_saved(
    admin_client: Client,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_url, minted = ladder_owned(upstream, control)
    url = reverse("admin:ladder_connection_change", args=["c1"])
    assert admin_client.get(url).status_code == 200  # the operator opens the page
    clean = ConnectionForm.clean

    def clean_then_rotate(form: ConnectionForm) -> dict[str, Any]:
        cleaned = clean(form)
        rotate("c1")  # after the admin loaded the row, before it is saved
        return cleaned

    monkeypatch.setattr(ConnectionForm, "clean", clean_then_rotate)
    response = admin_client.post(url, connection_form(position="7", base_url=base_url))
    monkeypatch.undo()

    assert response.status_code == 302
    row = Connection.objects.get(pk="c1")
    assert row.position == 7
    assert row.get_credential() != minted["access_token"]
    # The stored refresh token is the rotated one: the next refresh redeems it, nothing is reused.
    rotate("c1")
    summary = control.token_record()["summary"]
    assert (summary["ok"], summary["reused"], summary["revoked"]) == (2, 0, 0), summary
    assert Connection.objects.get(pk="c1").disabled_reason is None


def test_it_writes_back_no_live_state_the_form_only_showed(
    admin_client: Client, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    base_url, _ = ladder_owned(upstream, control)
    url = reverse("admin:ladder_connection_change", args=["c1"])
    page = admin_client.get(url).content.decode()
    assert 'name="initial-enabled"' in page  # what the page showed goes back with the form
    # Meanwhile a worker disables the connection and claims its poll.
    claimed = timezone.now() + timedelta(minutes=1)
    Connection.objects.filter(pk="c1").update(
        enabled=False, disabled_reason="needs_reauth", claimed_until=claimed
    )
    shown = {
        "initial-enabled": "on",
        "initial-disabled_reason": "",
        "initial-backoff_level": "0",
        "initial-cooldown_until_0": "",
        "initial-cooldown_until_1": "",
        "initial-next_refresh_at_0": "",
        "initial-next_refresh_at_1": "",
        "initial-claimed_until_0": "",
        "initial-claimed_until_1": "",
    }

    response = admin_client.post(url, {**connection_form(position="3", base_url=base_url), **shown})

    assert response.status_code == 302
    row = Connection.objects.get(pk="c1")
    assert (row.position, row.enabled, row.disabled_reason) == (3, False, "needs_reauth")
    assert row.claimed_until == claimed
    # What the operator does change is written.
    admin_client.post(
        url,
        {
            **connection_form(position="3", base_url=base_url, disabled_reason=""),
            **shown,
            "initial-disabled_reason": "needs_reauth",
        },
    )
    assert Connection.objects.get(pk="c1").disabled_reason is None
