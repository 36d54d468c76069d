"""Gateway tokens: stored only as a hash, compared in constant time, accepted only from the
Authorization header; no token or credential ever sits in a URL."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection as db_connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from ladder.services.tokens import gateway_token_authenticate, gateway_token_create, gateway_token_revoke
from tests.security.pages import admin_pages, dashboard_pages, page_urls
from tests.security.rows import CREDENTIAL_TAIL, Rows, rows_create

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SECRET_PARAMETERS = re.compile(r"[?&](?:token|access_token|api_key|apikey|key|credential|secret)=", re.I)


@pytest.fixture
def rows() -> Rows:
    return rows_create()


def test_it_stores_only_the_hash_of_a_token() -> None:
    token, value = gateway_token_create(name="stored")
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ladder_gatewaytoken WHERE id = %s", [token.pk])
        row = cursor.fetchone()
    assert row is not None
    assert all(value not in str(column) for column in row)
    assert token.token_hash == hashlib.sha256(value.encode()).hexdigest()
    assert token.prefix == value[:12]  # shown to tell tokens apart: 4 random characters of 43


def test_it_compares_the_hash_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    _, value = gateway_token_create(name="compared")
    calls: list[tuple[Any, Any]] = []
    verdict = {"equal": True}
    real_compare = hmac.compare_digest

    def compare(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return verdict["equal"] and real_compare(a, b)

    monkeypatch.setattr("ladder.services.tokens.hmac.compare_digest", compare)
    assert gateway_token_authenticate(plaintext=value, now=timezone.now()) is not None
    assert calls == [(hashlib.sha256(value.encode()).hexdigest(),) * 2]
    verdict["equal"] = False  # the constant-time comparison decides, not only the lookup
    assert gateway_token_authenticate(plaintext=value, now=timezone.now()) is None


def test_it_refuses_unknown_and_revoked_tokens(client: Client) -> None:
    token, value = gateway_token_create(name="revoked")
    url = reverse("ladder:connections")
    assert client.get(url, headers={"Authorization": f"Bearer {value}"}).status_code == 200
    assert client.get(url, headers={"Authorization": f"Bearer {value}x"}).status_code == 401
    gateway_token_revoke(token_ids=[token.pk], now=timezone.now())
    assert client.get(url, headers={"Authorization": f"Bearer {value}"}).status_code == 401


@pytest.mark.parametrize("parameter", ["token", "access_token", "api_key", "bearer"])
def test_it_accepts_no_token_from_the_query_string(client: Client, parameter: str) -> None:
    _, value = gateway_token_create(name="query")
    response = client.get(f"{reverse('ladder:connections')}?{parameter}={value}")
    assert response.status_code == 401
    assert json.loads(response.content)["error"]["code"] == "unauthenticated"
    resolve = client.post(
        f"{reverse('ladder:pools-resolve')}?{parameter}={value}",
        json.dumps({"model": "auto/thrifty"}),
        content_type="application/json",
    )
    assert resolve.status_code == 401


def test_it_accepts_no_token_from_a_form_body_a_cookie_or_another_scheme(client: Client) -> None:
    _, value = gateway_token_create(name="elsewhere")
    url = reverse("ladder:pools-resolve")
    assert client.post(url, {"access_token": value, "model": "auto/thrifty"}).status_code == 401
    client.cookies["token"] = value
    assert client.get(reverse("ladder:connections")).status_code == 401
    for scheme in ("Token", "Basic", ""):
        headers = {"Authorization": f"{scheme} {value}".strip()}
        assert client.get(reverse("ladder:connections"), headers=headers).status_code == 401


def test_the_admin_shows_a_new_token_once_and_never_in_a_url_or_cookie(client: Client) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.test", "pw-Root-12345"))
    form = {"name": "new-one", "scope_resolve": "on", "scope_report": "on"}
    response = client.post(reverse("admin:ladder_gatewaytoken_add"), form)
    assert response.status_code == 302
    location = response["Location"]
    shown = client.get(location)
    match = re.search(r"olr_[A-Za-z0-9_-]{43}", shown.content.decode())
    assert match is not None, "the new token is shown once"
    value = match.group(0)
    assert m.GatewayToken.objects.get(name="new-one").token_hash == hashlib.sha256(value.encode()).hexdigest()
    assert value not in location
    for answer in (response, shown):
        assert all(value not in morsel.value for morsel in answer.cookies.values())
    assert all(value not in morsel.value for morsel in client.cookies.values())
    assert value not in client.get(location).content.decode()  # only once


def test_no_rendered_url_carries_a_secret(client: Client, rows: Rows) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.test", "pw-Root-12345"))
    urls: list[str] = []
    for url in [*admin_pages(), *(url for url, _ in dashboard_pages(rows))]:
        response = client.get(url)
        if response.get("Location"):
            urls.append(response["Location"])
        if response.get("Content-Type", "").startswith("text/html"):
            urls.extend(page_urls(response.content.decode()))
    assert len(urls) > 500
    for url in urls:
        assert rows.token_value not in url
        assert CREDENTIAL_TAIL not in url
        assert not SECRET_PARAMETERS.search(url), url


def test_no_template_builds_a_url_from_a_token_or_credential() -> None:
    attribute = re.compile(r"""\b(?:href|src|action|hx-get|hx-post)\s*=\s*(["'])(.*?)\1""", re.S)
    for path in (ROOT / "templates").rglob("*.html"):
        for _, value in attribute.findall(path.read_text()):
            assert not re.search(r"token|credential|secret", value, re.I), (path, value)
