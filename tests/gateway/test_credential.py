"""GET/PUT /api/v1/connections/{id}/credential (scope credentials), against the fake upstream's token
endpoints over real HTTP: the gateway borrows a ladder-owned token (refreshed first when due), pushes a
gateway-owned one; every call recorded (who, when, never the value) and rate-limited per token."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder import models as m
from ladder.services.credentials import credential_import
from ladder.services.tokens import gateway_token_create
from tests.gateway.conftest import Api, assert_error, assert_schema, make_connection

pytestmark = pytest.mark.django_db

PATH = "/api/v1/connections/{connection_id}/credential"


def url(cid: str) -> str:
    return f"/api/v1/connections/{cid}/credential"


@pytest.fixture
def creds(client: Client) -> Api:
    return Api(client, gateway_token_create(name="borrower", scope_resolve=False, scope_credentials=True)[1])


def put(api: Api, cid: str, body: Any) -> Any:
    return api.client.put(
        url(cid), data=json.dumps(body), content_type="application/json", headers=api.headers(api.token)
    )


def ladder_owned(upstream: FakeUpstream, control: FakeUpstreamControl, cid: str, lifetime_s: float) -> dict:
    make_connection(cid, base_url=upstream.url_for("claude-oauth", cid))
    minted = control.mint_login("claude-oauth", lifetime_s=lifetime_s)
    credential_import(connection_id=cid, text=json.dumps(minted["file"]), owner="ladder")
    return minted


def test_it_lends_a_fresh_token_without_redeeming(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    minted = ladder_owned(upstream, control, "c1", 3600)

    body = assert_schema(creds.get(url("c1")), PATH, "GET")

    assert body["access_token"] == minted["access_token"]
    assert body["expires_at"].endswith("Z")
    assert control.token_record()["summary"]["redemptions"] == 0
    access = m.CredentialAccess.objects.get()
    assert (access.token_name, access.action, access.outcome, access.connection_id) == (
        "borrower",
        "get",
        "ok",
        "c1",
    )


def test_it_refreshes_first_when_the_token_is_within_its_lead(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    minted = ladder_owned(upstream, control, "c1", 4)
    m.Connection.objects.filter(pk="c1").update(credential_updated_at=timezone.now() - timedelta(hours=1))

    body = assert_schema(creds.get(url("c1")), PATH, "GET")

    assert body["access_token"] != minted["access_token"]
    assert control.token_record()["summary"]["ok"] == 1


def test_it_refuses_what_the_ladder_does_not_own(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection("key", "openai", "apikey")
    minted = control.mint_login("claude-oauth")
    make_connection("gw")
    credential_import(connection_id="gw", text=json.dumps(minted["file"]), owner="gateway")

    assert_error(creds.get(url("gw")), PATH, "GET", 409, "credential_not_owned")
    assert_error(creds.get(url("nope")), PATH, "GET", 404, "connection_not_found")
    m.Connection.objects.filter(pk="key").update(credential_owner="ladder")
    assert_error(creds.get(url("key")), PATH, "GET", 409, "no_credential")


@pytest.mark.parametrize("bad_id", ["a%00b", "has%20space", "x" * 65])
def test_it_answers_404_for_an_id_outside_the_format_and_records_nothing(creds: Api, bad_id: str) -> None:
    assert_error(creds.get(url(bad_id)), PATH, "GET", 404, "connection_not_found")
    assert_error(
        put(creds, bad_id, {"access_token": "t", "expires_at": "2099-01-01T00:00:00Z"}),
        PATH,
        "PUT",
        404,
        "connection_not_found",
    )
    assert not m.CredentialAccess.objects.exists()


def test_a_refused_refresh_token_answers_needs_reauth(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl, client: Client
) -> None:
    import httpx

    minted = ladder_owned(upstream, control, "c1", 4)
    m.Connection.objects.filter(pk="c1").update(credential_updated_at=timezone.now() - timedelta(hours=1))
    httpx.post(
        upstream.url_for("claude-oauth") + "/v1/oauth/token", json={"refresh_token": minted["refresh_token"]}
    )

    error = assert_error(creds.get(url("c1")), PATH, "GET", 409, "needs_reauth")

    assert minted["refresh_token"] not in error["message"]
    assert m.Connection.objects.get(pk="c1").disabled_reason == "needs_reauth"
    assert_error(creds.get(url("c1")), PATH, "GET", 409, "needs_reauth")


def test_a_held_refresh_of_an_expired_token_answers_503_with_retry_after(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    settings.LADDER_CREDENTIAL_WAIT_S = 0.05
    ladder_owned(upstream, control, "c1", 60)
    m.Connection.objects.filter(pk="c1").update(
        credential_expires_at=timezone.now() - timedelta(seconds=1),
        refresh_claimed_until=timezone.now() + timedelta(seconds=30),
    )

    response = creds.get(url("c1"))

    assert_error(response, PATH, "GET", 503, "refresh_in_progress")
    assert int(response["Retry-After"]) > 0


def test_the_gateway_pushes_its_own_token(creds: Api, control: FakeUpstreamControl) -> None:
    make_connection("gw")
    m.Connection.objects.filter(pk="gw").update(
        credential_owner="gateway", enabled=False, disabled_reason="auth_failed"
    )
    expires = (timezone.now() + timedelta(hours=1)).isoformat()

    response = put(
        creds, "gw", {"access_token": "pushed-secret-token-123456", "expires_at": expires, "account_id": "a1"}
    )

    body = assert_schema(response, PATH, "PUT")
    assert body["credential"]["owner"] == "gateway"
    assert body["credential"]["account_id"] == "a1"
    assert "pushed-secret" not in response.content.decode()
    row = m.Connection.objects.get(pk="gw")
    assert (row.get_credential(), row.enabled, row.disabled_reason) == (
        "pushed-secret-token-123456",
        True,
        None,
    )
    assert not row.has_refresh_token
    assert m.CredentialAccess.objects.get().action == "put"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"access_token": "", "expires_at": "2099-01-01T00:00:00Z"}, "access_token"),
        ({"access_token": "t", "expires_at": "2099-01-01T00:00:00"}, "expires_at"),
        ({"access_token": "t", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
    ],
)
def test_a_bad_push_names_the_field(creds: Api, body: dict, field: str) -> None:
    make_connection("gw")
    m.Connection.objects.filter(pk="gw").update(credential_owner="gateway")

    error = assert_error(put(creds, "gw", body), PATH, "PUT", 422)

    assert error["field"] == field


def test_a_push_to_a_ladder_owned_connection_is_refused(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    ladder_owned(upstream, control, "c1", 3600)

    response = put(creds, "c1", {"access_token": "x", "expires_at": "2099-01-01T00:00:00Z"})

    assert_error(response, PATH, "PUT", 409, "credential_not_owned")


def test_it_needs_the_credentials_scope(
    gateway: Api, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    ladder_owned(upstream, control, "c1", 3600)

    assert_error(gateway.get(url("c1")), PATH, "GET", 403, "insufficient_scope")


def test_it_is_rate_limited_per_token(
    creds: Api, upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    settings.LADDER_CREDENTIALS_RATE_PER_MIN = 3
    settings.LADDER_RATELIMIT_PREFIX = f"test-credential-rate:{uuid.uuid4().hex}"  # counts of its own
    ladder_owned(upstream, control, "c1", 3600)

    statuses = [creds.get(url("c1")).status_code for _ in range(4)]

    assert statuses[:3] == [200, 200, 200]
    response = creds.get(url("c1"))
    assert_error(response, PATH, "GET", 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1


def test_no_token_reaches_the_log_or_the_connections_answer(
    creds: Api,
    gateway: Api,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    minted = ladder_owned(upstream, control, "c1", 4)
    m.Connection.objects.filter(pk="c1").update(credential_updated_at=timezone.now() - timedelta(hours=1))
    lent = json.loads(creds.get(url("c1")).content)["access_token"]

    listing = gateway.get("/api/v1/connections").content.decode()

    assert json.loads(listing)["connections"][0]["credential"]["owner"] == "ladder"
    for secret in (minted["access_token"], minted["refresh_token"], lent):
        assert secret not in listing
        assert secret not in caplog.text
