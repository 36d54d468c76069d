"""What every endpoint shares: token access, the one error shape, strict bodies, no 500 on bad input."""

from __future__ import annotations

import gc
import http.client
import json
import sqlite3
import weakref
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

import pytest
from django.db import OperationalError
from django.test import RequestFactory
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladder import models as m
from ladder.gateway.reports import usage_report
from ladder.services.tokens import gateway_token_create, gateway_token_revoke
from tests.gateway.conftest import Api, assert_error, make_connection

pytestmark = pytest.mark.django_db

# (url, documented path, method, scope)
ENDPOINTS = [
    ("/api/v1/pools/resolve", "/api/v1/pools/resolve", "post", "resolve"),
    ("/api/v1/usage", "/api/v1/usage", "post", "report"),
    ("/api/v1/connections", "/api/v1/connections", "get", "resolve"),
    ("/api/v1/connections/c1", "/api/v1/connections/{connection_id}", "get", "resolve"),
    (
        "/api/v1/connections/c1/observations",
        "/api/v1/connections/{connection_id}/observations",
        "post",
        "report",
    ),
    ("/api/v1/connections/c1/failures", "/api/v1/connections/{connection_id}/failures", "post", "report"),
]
POSTS = [endpoint for endpoint in ENDPOINTS if endpoint[2] == "post"]


@pytest.fixture
def c1() -> m.Connection:
    return make_connection("c1")


def call(api_client: Api, url: str, method: str, body: Any = None, **kwargs: Any) -> Any:
    if method == "get":
        return api_client.get(url, **kwargs)
    return api_client.post(url, {} if body is None else body, **kwargs)


@pytest.mark.parametrize(("url", "path", "method", "scope"), ENDPOINTS)
def test_it_asks_for_a_bearer_token(
    client: Any, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    response = call(Api(client, None), url, method)

    assert_error(response, path, method, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("url", "path", "method", "scope"), ENDPOINTS)
def test_it_refuses_an_unknown_token(
    client: Any, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    assert_error(
        call(Api(client, "olr_not-a-real-token-at-all"), url, method), path, method, 401, "invalid_token"
    )


@pytest.mark.parametrize(("url", "path", "method", "scope"), ENDPOINTS)
def test_it_refuses_a_revoked_token(
    client: Any, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    token, plaintext = gateway_token_create(name="old")
    gateway_token_revoke(token_ids=[token.pk], now=timezone.now())

    assert_error(call(Api(client, plaintext), url, method), path, method, 401, "invalid_token")


@pytest.mark.parametrize(("url", "path", "method", "scope"), ENDPOINTS)
def test_it_refuses_a_token_without_the_scope(
    client: Any, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    other = {"resolve": "report", "report": "resolve"}[scope]
    _, plaintext = gateway_token_create(
        name="narrow", scope_resolve=other == "resolve", scope_report=other == "report"
    )

    error = assert_error(call(Api(client, plaintext), url, method), path, method, 403, "insufficient_scope")
    assert scope in error["message"]


@pytest.mark.parametrize(("url", "path", "method", "scope"), ENDPOINTS)
def test_it_refuses_the_wrong_method(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    other = "get" if method == "post" else "post"

    response = call(gateway, url, other)

    assert_error(response, path, method, 405, "method_not_allowed")
    assert response["Allow"] == method.upper()


@pytest.mark.parametrize(("url", "path", "method", "scope"), POSTS)
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_it_refuses_a_body_that_is_not_json(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str, content_type: str
) -> None:
    response = gateway.post(url, '{"model": "auto/thrifty"}', raw=True, content_type=content_type)

    assert_error(response, path, method, 415, "unsupported_media_type")


@pytest.mark.parametrize(("url", "path", "method", "scope"), POSTS)
def test_it_refuses_a_body_over_one_mebibyte(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str
) -> None:
    body = json.dumps({"model": "auto/thrifty", "padding": "x" * (1 << 20)})

    assert_error(gateway.post(url, body, raw=True), path, method, 413, "body_too_large")


def test_it_drains_a_refused_body_before_answering(token: str) -> None:
    request = RequestFactory().post(
        "/api/v1/usage",
        data=b"x" * (3 << 20),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )

    response = usage_report(request)

    assert response.status_code == 413
    assert request.read(1) == b""  # everything was read


@pytest.mark.django_db(transaction=True)
def test_it_lets_a_real_client_read_the_413(live_server: Any) -> None:
    _, plaintext = gateway_token_create(name="live")
    address = urlparse(live_server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    body = b'{"padding": "' + b"x" * (4 << 20) + b'"}'

    connection.request(
        "POST",
        "/api/v1/usage",
        body=body,
        headers={"Authorization": f"Bearer {plaintext}", "Content-Type": "application/json"},
    )
    response = connection.getresponse()

    assert response.status == 413
    assert json.loads(response.read())["error"]["code"] == "body_too_large"
    connection.close()


BAD_JSON = [
    b"   ",
    b"{",
    b"{'model': 'auto/thrifty'}",
    b'{"model": NaN}',
    b'{"model": Infinity}',
    b'{"n": 1e999}',
    b'{"n": -1e999}',
    b'{"n": ' + b"9" * 5000 + b"}",
    b'{"model": "\\ud800"}',
    b'{"model": "auto/thrifty\\u0000"}',
    b'{"\\u0000": 1}',
    b"\xff\xfe{}",
    b"[" * 100_000 + b"]" * 100_000,
]


@pytest.mark.parametrize(("url", "path", "method", "scope"), POSTS)
@pytest.mark.parametrize("raw", BAD_JSON, ids=range(len(BAD_JSON)))
def test_it_refuses_a_body_that_is_not_valid_json(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str, raw: bytes
) -> None:
    response = gateway.client.post(
        url, data=raw, content_type="application/json", headers=gateway.headers(gateway.token)
    )

    assert_error(response, path, method, 400, "invalid_json")


@pytest.mark.parametrize(("url", "path", "method", "scope"), POSTS)
@pytest.mark.parametrize("body", [[], "auto/thrifty", 42, None, True, [{"model": "auto/thrifty"}]])
def test_it_refuses_a_body_that_is_not_an_object(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str, body: Any
) -> None:
    assert_error(gateway.post(url, body), path, method, 400, "invalid_request")


def test_it_answers_unknown_api_paths_in_the_error_shape(gateway: Api) -> None:
    for url in ("/api/v1/nothing", "/api/v2/pools/resolve", "/api/v1/usage/"):
        response = gateway.get(url)
        assert response.status_code == 404
        assert json.loads(response.content)["error"]["code"] == "not_found"


def test_it_answers_503_when_the_database_is_down(gateway: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(**kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("ladder.gateway.decorators.gateway_token_authenticate", down)

    response = gateway.post("/api/v1/pools/resolve", {"model": "auto/thrifty"})

    assert_error(response, "/api/v1/pools/resolve", "post", 503, "database_unavailable")
    assert response["Retry-After"] == "5"


class FailedCursor:
    """Stands for the cursor a database error's traceback holds (and, on SQLite, its lock)."""


def test_it_lets_the_failed_cursor_go_at_once(gateway: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    cursors: list[weakref.ref[FailedCursor]] = []

    def locked(**kwargs: Any) -> Any:
        cursor = FailedCursor()
        cursors.append(weakref.ref(cursor))
        try:
            raise sqlite3.OperationalError("database is locked")
        except sqlite3.OperationalError as exc:
            # As Django's error wrapper does: the frame that raises keeps the exception it raises,
            # a reference cycle that only the garbage collector would break.
            wrapped = OperationalError(*exc.args)
            raise wrapped from exc

    monkeypatch.setattr("ladder.gateway.decorators.gateway_token_authenticate", locked)
    gc.disable()  # no automatic collection: only the cleared frames can free it
    try:
        response = gateway.post("/api/v1/pools/resolve", {"model": "auto/thrifty"})
        assert_error(response, "/api/v1/pools/resolve", "post", 503, "database_unavailable")
        assert cursors[0]() is None  # freed without the collector
    finally:
        gc.enable()


def test_it_writes_last_used_at_at_most_once_a_minute(gateway: Api, token: str) -> None:
    gateway.get("/api/v1/connections")
    first = m.GatewayToken.objects.get(name="gateway").last_used_at
    assert first is not None

    gateway.get("/api/v1/connections")
    assert m.GatewayToken.objects.get(name="gateway").last_used_at == first

    m.GatewayToken.objects.filter(name="gateway").update(last_used_at=first - timedelta(seconds=61))
    gateway.get("/api/v1/connections")
    later = m.GatewayToken.objects.get(name="gateway").last_used_at
    assert later is not None
    assert later > first


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "model",
        "candidates",
        "events",
        "request_id",
        "connection_id",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "occurred_at",
        "status",
        "headers",
        "body",
        "observed_at",
        "provider",
        "allowed_connection_ids",
    ]
)
bodies = st.dictionaries(field_names, json_values, max_size=6) | json_values


@pytest.mark.parametrize(("url", "path", "method", "scope"), POSTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_it_never_answers_500_to_arbitrary_json(
    gateway: Api, c1: m.Connection, url: str, path: str, method: str, scope: str, body: Any
) -> None:
    response = gateway.post(url, body)

    assert response.status_code in (200, 400, 409, 413, 422), response.content
    if response.status_code != 200:
        assert_error(response, path, method, response.status_code)


GHOST_URLS = [
    ("/api/v1/connections/ghost", "/api/v1/connections/{connection_id}", "get"),
    ("/api/v1/connections/ghost/observations", "/api/v1/connections/{connection_id}/observations", "post"),
    ("/api/v1/connections/ghost/failures", "/api/v1/connections/{connection_id}/failures", "post"),
]
GHOST_404 = {
    "error": {
        "code": "connection_not_found",
        "message": "the ladder knows no connection 'ghost'",
        "field": None,
    }
}


@pytest.mark.parametrize("gone_after_the_check", [False, True], ids=["unknown", "gone-after-the-check"])
@pytest.mark.parametrize(("url", "path", "method"), GHOST_URLS)
def test_it_answers_one_404_wherever_a_connection_is_missing(
    gateway: Api,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    path: str,
    method: str,
    gone_after_the_check: bool,
) -> None:
    if gone_after_the_check:  # deleted between the view's check and its read or write
        monkeypatch.setattr("ladder.gateway.connections.connection_exists", lambda *, connection_id: True)

    response = call(gateway, url, method, {"status": 429, "headers": {}})

    assert_error(response, path, method, 404, "connection_not_found")
    assert json.loads(response.content) == GHOST_404
