"""Every write needs its permission: the dashboard's POST views, the admin of every registered
model, and the gateway API's scopes. The views are enumerated from the URL conf, the admin registry
and the OpenAPI document, so that a new write view is covered (or fails here) by itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone

from ladder import models as m
from ladder import urls as ladder_urls
from ladder.gateway.schema import openapi_document
from ladder.services.tokens import gateway_token_create
from tests.dashboard.factories import user_create
from tests.security.rows import Rows, rows_create

pytestmark = pytest.mark.django_db

DASHBOARD_WRITES = {
    "connection_refresh",
    "connection_reserve",
    "connection_cli_file",
    "catalog_new",
    "catalog_entry",
    "alert_channel_test",
    "alert_rule_edit",
}
PUBLIC_VIEWS = {"login", "logout"}  # anyone may log in or out
CATALOG_FORM = {
    "billing": "metered",
    "overage": "meters-to-paid",
    "source_url": "",
    "notes": "changed by someone without the permission",
    "reviewed_at": "",
}


@pytest.fixture
def rows() -> Rows:
    return rows_create()


def dashboard_patterns() -> list[URLPattern]:
    return [
        pattern
        for pattern in ladder_urls.urlpatterns
        if isinstance(pattern, URLPattern)
        and pattern.callback.__module__ == "ladder.dashboard.views"
        and pattern.name not in PUBLIC_VIEWS
    ]


def dashboard_url(pattern: URLPattern, rows: Rows) -> str:
    entry = rows.objects["billingcatalogentry"]
    assert isinstance(entry, m.BillingCatalogEntry)
    channel, _ = m.AlertChannel.objects.get_or_create(
        name="perm-hook", defaults={"kind": "webhook", "url": "http://127.0.0.1:9/hook"}
    )
    rule = m.AlertRule.objects.order_by("pk").first()
    assert rule is not None  # the default rules (migration 0020)
    values = {
        "connection_id": rows.connection.pk,
        "entry_id": entry.pk,
        "channel_id": channel.pk,
        "rule_id": rule.pk,
    }
    kwargs = {name: values[name] for name in pattern.pattern.converters}
    return reverse(f"ladder:{pattern.name}", kwargs=kwargs)


def dashboard_state() -> tuple[Any, ...]:
    return (
        list(m.BillingCatalogEntry.objects.order_by("pk").values_list("pk", "billing", "overage", "notes")),
        m.CatalogChange.objects.count(),
        list(m.Connection.objects.values_list("pk", "last_polled_at", "claimed_until")),
        m.QuotaReading.objects.count(),
        m.AlertDelivery.objects.count(),
        list(m.AlertRule.objects.order_by("pk").values_list("pk", "enabled", "threshold", "quiet_period_s")),
    )


def post_everything(client: Client, rows: Rows) -> dict[str, int]:
    """name → status of a POST to every dashboard view (a 405 means the view takes no POST)."""
    answers = {}
    for pattern in dashboard_patterns():
        data = {**CATALOG_FORM, "provider": "newprov", "auth_type": "apikey"}
        answers[str(pattern.name)] = client.post(dashboard_url(pattern, rows), data).status_code
    return answers


@pytest.mark.parametrize(
    "perms",
    [
        (),
        ("view_billingcatalogentry", "view_connection"),
        ("change_billingcatalogentry", "change_connection"),
    ],
    ids=["no-permission", "view-only", "change-but-not-staff"],
)
def test_a_viewer_gets_403_on_every_dashboard_write(
    client: Client, rows: Rows, perms: tuple[str, ...]
) -> None:
    client.force_login(user_create("viewer", perms=perms))
    before = dashboard_state()
    answers = post_everything(client, rows)
    writes = {name for name, status in answers.items() if status != 405}
    assert writes == DASHBOARD_WRITES, answers  # a new POST view must be added here, with its permission
    assert {answers[name] for name in DASHBOARD_WRITES} == {403}, answers
    assert dashboard_state() == before


def test_staff_without_the_permission_gets_403_on_every_dashboard_write(client: Client, rows: Rows) -> None:
    client.force_login(user_create("staff", staff=True, perms=("view_billingcatalogentry",)))
    before = dashboard_state()
    answers = post_everything(client, rows)
    assert {answers[name] for name in DASHBOARD_WRITES} == {403}, answers
    assert dashboard_state() == before


def test_curating_a_new_kind_needs_the_add_permission_too(client: Client, rows: Rows) -> None:
    client.force_login(user_create("curator", staff=True, perms=("change_billingcatalogentry",)))
    response = client.post(reverse("ladder:catalog_new"), {**CATALOG_FORM, "provider": "newprov"})
    assert response.status_code == 403
    assert not m.BillingCatalogEntry.objects.filter(provider="newprov").exists()


def test_anonymous_writes_go_to_the_login_page(client: Client, rows: Rows) -> None:
    before = dashboard_state()
    for name, status in post_everything(client, rows).items():
        assert status in (302, 405), (name, status)
    assert dashboard_state() == before


def model_counts() -> dict[str, int]:
    return {model._meta.label: model._default_manager.count() for model in admin.site._registry}


def test_staff_without_permissions_gets_403_on_every_admin_write(client: Client, rows: Rows) -> None:
    staff = user_create("staff", staff=True)
    client.force_login(staff)
    before = model_counts()
    configuration = list(m.LadderConfiguration.objects.values())
    refused = 0
    for model in admin.site._registry:
        opts = model._meta
        base = f"admin:{opts.app_label}_{opts.model_name}"
        first: Model | None = model._default_manager.order_by("pk").first()
        urls = [reverse(f"{base}_add"), reverse(f"{base}_changelist")]
        if first is not None:
            urls += [reverse(f"{base}_change", args=[first.pk]), reverse(f"{base}_delete", args=[first.pk])]
        for url in urls:
            data = {
                "action": "delete_selected",
                "_selected_action": [first.pk] if first else [],
                "post": "yes",
            }
            response = client.post(url, data)
            assert response.status_code == 403, (url, response.status_code)
            refused += 1
    assert refused > 50
    assert model_counts() == before
    assert list(m.LadderConfiguration.objects.values()) == configuration
    assert User.objects.get(pk=staff.pk).is_superuser is False


def test_revoking_gateway_tokens_needs_the_change_permission(client: Client, rows: Rows) -> None:
    client.force_login(user_create("auditor", staff=True, perms=("view_gatewaytoken",)))
    url = reverse("admin:ladder_gatewaytoken_changelist")
    assert client.get(url).status_code == 200  # the auditor may look
    client.post(url, {"action": "revoke_tokens", "_selected_action": [rows.token.pk]})
    assert m.GatewayToken.objects.get(pk=rows.token.pk).revoked_at is None

    editor = user_create("token-admin", staff=True, perms=("view_gatewaytoken", "change_gatewaytoken"))
    client.force_login(editor)
    client.post(url, {"action": "revoke_tokens", "_selected_action": [rows.token.pk]})
    assert m.GatewayToken.objects.get(pk=rows.token.pk).revoked_at is not None


def api_operations() -> list[tuple[str, str]]:
    """(method, path) of every operation the OpenAPI document declares."""
    return [
        (method.upper(), path)
        for path, operations in openapi_document()["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    ]


def api_state() -> tuple[int, ...]:
    return (
        m.UsageEvent.objects.count(),
        m.QuotaReading.objects.count(),
        m.FailureEvent.objects.count(),
        m.QuotaWindow.objects.count(),
    )


BODIES: dict[str, dict[str, Any]] = {
    "/api/v1/pools/resolve": {"model": "auto/thrifty"},
    "/api/v1/usage": {
        "request_id": "req-perm-1",
        "connection_id": "claude.sec:1",
        "model": "m",
        "cost_usd": 1,
    },
    "/api/v1/connections/{connection_id}/observations": {
        "headers": {"anthropic-ratelimit-unified-5h-utilization": "0.5"}
    },
    "/api/v1/connections/{connection_id}/failures": {"status": 429, "model": "claude-sonnet-4-5"},
    "/api/v1/connections/{connection_id}/credential": {
        "access_token": "t",
        "expires_at": "2099-01-01T00:00:00Z",
    },
}


def test_every_api_write_needs_the_report_scope(client: Client, rows: Rows, monkeypatch: Any) -> None:
    monkeypatch.setattr(
        "ladder.gateway.resolve.refresh_request", lambda *, connection_ids: list(connection_ids)
    )
    monkeypatch.setattr(
        "ladder.services.failures.refresh_request", lambda *, connection_ids: list(connection_ids)
    )
    _, resolve_only = gateway_token_create(name="resolve-only", scope_resolve=True, scope_report=False)
    _, report_only = gateway_token_create(name="report-only", scope_resolve=False, scope_report=True)
    _, credentials_only = gateway_token_create(
        name="credentials-only", scope_resolve=False, scope_report=False, scope_credentials=True
    )
    type(rows.connection).objects.filter(pk=rows.connection.pk).update(credential_owner="gateway")
    writes = [(method, path) for method, path in api_operations() if method != "GET"]
    assert ("POST", "/api/v1/usage") in writes
    for method, path in writes:
        before = api_state()
        url = path.replace("{connection_id}", rows.connection.pk)
        body = json.dumps(BODIES.get(path, {}))
        needed, lacking = (
            (resolve_only, report_only) if path == "/api/v1/pools/resolve" else (report_only, resolve_only)
        )
        if path.endswith("/credential"):  # issue 17: its own scope
            needed, lacking = credentials_only, report_only

        def send(token: str | None, method: str = method, url: str = url, body: str = body) -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return client.generic(method, url, body, content_type="application/json", headers=headers)

        assert send(None).status_code == 401, (method, path)
        refused = send(lacking)
        assert refused.status_code == 403, (method, path, refused.content)
        assert json.loads(refused.content)["error"]["code"] == "insufficient_scope"
        assert api_state() == before, (method, path)  # a refused write wrote nothing
        accepted = send(needed)
        assert accepted.status_code < 300, (method, path, accepted.content)


def test_a_revoked_reporter_writes_nothing(client: Client, rows: Rows) -> None:
    token, value = gateway_token_create(name="gone", scope_resolve=False, scope_report=True)
    m.GatewayToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    before = api_state()
    response = client.post(
        reverse("ladder:usage"),
        json.dumps(BODIES["/api/v1/usage"]),
        content_type="application/json",
        headers={"Authorization": f"Bearer {value}"},
    )
    assert response.status_code == 401
    assert api_state() == before


def test_the_admin_requires_a_staff_login(client: Client) -> None:
    client.force_login(User.objects.create_user("plain", "plain@example.test", "pw-Plain-12345"))
    response = client.post(reverse("admin:ladder_connection_add"), {"id": "sneaky", "provider": "claude"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert not m.Connection.objects.filter(pk="sneaky").exists()
    assert Permission.objects.filter(user__username="plain").count() == 0
