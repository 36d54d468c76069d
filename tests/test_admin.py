from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ladder.admin import ConnectionForm
from ladder.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.models import (
    BillingCatalogEntry,
    Connection,
    EscalationEvent,
    LadderConfiguration,
    ModelCatalogEntry,
    QuotaReading,
    QuotaWindow,
    StateVersion,
    UsageEvent,
)
from ladder.selectors.snapshot import snapshot_load, state_version_get
from ladder.services.credentials import credential_import, credential_refresh

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
SECRET = "sk-PLAINTEXT-never-shown-0123456789"


@pytest.fixture
def rows() -> dict[str, Any]:
    connection = Connection(id="claude.max:1", provider="claude", auth_type="oauth")
    connection.set_credential(SECRET)
    connection.save()
    reading = QuotaReading.objects.create(connection=connection, fetched_at=NOW)
    window = QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=42)
    event = UsageEvent.objects.create(
        request_id="req-1",
        connection=connection,
        budget_rung="cheap",
        cost_usd=Decimal("0.5"),
        occurred_at=NOW,
    )
    return {
        "connection": connection,
        "quotareading": reading,
        "quotawindow": window,
        "usageevent": event,
        "billingcatalogentry": BillingCatalogEntry.objects.get(provider="claude", auth_type="oauth"),
        "modelcatalogentry": ModelCatalogEntry.objects.get(provider="claude", model="claude-opus-4-1"),
        "ladderconfiguration": LadderConfiguration.load(),
        "stateversion": StateVersion.objects.get(pk=1),
        "escalationevent": EscalationEvent.objects.create(
            auto_id="auto/thrifty",
            from_rung=0,
            to_rung=3,
            kind="up",
            why="plan: quota_exhausted",
            occurred_at=NOW,
        ),
    }


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


def connection_form(**overrides: str) -> dict[str, str]:
    data = {
        "provider": "claude",
        "auth_type": "oauth",
        "enabled": "on",
        "disabled_reason": "",
        "position": "0",
        "models": "",
        "overage_override": "",
        "reserve_pct": "",
        "min_poll_interval_s": "",
        "base_url": "",
        "cooldown_until_0": "",
        "cooldown_until_1": "",
        "backoff_level": "0",
        "next_refresh_at_0": "",
        "next_refresh_at_1": "",
        "claimed_until_0": "",
        "claimed_until_1": "",
        "credential": "",
    }
    return {**data, **overrides}


def configuration_form(**overrides: str) -> dict[str, str]:
    data = {
        "exit_cutoff_pct": "2",
        "reentry_min_remaining_pct": "5",
        "max_reading_age_s": "180",
        "rung_budget_usd": "{}",
        "budget_period": "month",
        "free_max_input_usd_per_mtok": "0",
        "cheap_max_input_usd_per_mtok": "1",
        "refresh_interval_s": "60",
        "max_event_cost_usd": "100",
    }
    return {**data, **overrides}


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


def test_it_shows_configuration_field_errors(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(
        url, configuration_form(exit_cutoff_pct="150", rung_budget_usd='{"cheap": 5, "gold": 1}')
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert "must be a number between 0 and 100" in body
    assert "gold: unknown rung &#x27;gold&#x27;" in body
    assert LadderConfiguration.load().exit_cutoff_pct == 2.0


def test_it_refuses_a_negative_max_event_cost_naming_it(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(url, configuration_form(max_event_cost_usd="-1"))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["max_event_cost_usd"] == ["must be a number ≥ 0"]
    assert LadderConfiguration.load().max_event_cost_usd == 100.0
    admin_client.post(url, configuration_form(max_event_cost_usd="250"))
    assert LadderConfiguration.load().max_event_cost_usd == 250.0


def test_it_saves_a_valid_configuration(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()
    url = reverse("admin:ladder_ladderconfiguration_change", args=[configuration.pk])

    response = admin_client.post(url, configuration_form(rung_budget_usd='{"cheap": 5, "premium": 0}'))

    assert response.status_code == 302
    assert LadderConfiguration.load().rung_budget_usd == {"cheap": 5, "premium": 0}


def test_it_offers_no_add_or_delete_for_the_configuration(admin_client: Client) -> None:
    configuration = LadderConfiguration.load()

    assert admin_client.get(reverse("admin:ladder_ladderconfiguration_add")).status_code == 403
    delete_url = reverse("admin:ladder_ladderconfiguration_delete", args=[configuration.pk])
    assert admin_client.get(delete_url).status_code == 403
    assert LadderConfiguration.objects.count() == 1


def test_it_redirects_the_configuration_changelist_to_the_single_row(admin_client: Client) -> None:
    response = admin_client.get(reverse("admin:ladder_ladderconfiguration_changelist"))

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:ladder_ladderconfiguration_change", args=[1])


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
