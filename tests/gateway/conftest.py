from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from django.test import Client
from jsonschema import Draft202012Validator

from ladder import models as m
from ladder.gateway.schema import openapi_document
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.state import bump_state_version
from ladder.services.tokens import gateway_token_create
from tests.conftest import TEST_HOTSTATE_PREFIX

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse as TestResponse

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


@dataclass
class Clock:
    now: datetime = NOW

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@dataclass
class RefreshRecorder:
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, *, connection_ids: list[str]) -> list[str]:
        self.calls.append(list(connection_ids))
        return list(connection_ids)


@pytest.fixture(autouse=True)
def _fresh_snapshot_cache() -> Iterator[None]:
    # Test databases roll back without bumping the state version: never reuse another test's snapshot.
    snapshot_cache.clear()
    yield
    snapshot_cache.clear()


@pytest.fixture(autouse=True)
def _own_hot_state_prefix(settings: Any) -> None:
    # The escalation log keeps each auto id's last rung in Redis: every test starts from none. (The
    # run's cleanup removes these keys: they sit under the run's prefix.)
    settings.LADDER_HOTSTATE_PREFIX = f"{TEST_HOTSTATE_PREFIX}:{uuid.uuid4().hex[:12]}"


@pytest.fixture(autouse=True)
def refreshes(monkeypatch: pytest.MonkeyPatch) -> RefreshRecorder:
    """Refresh requests recorded instead of queued (the shared Redis stays untouched)."""
    recorder = RefreshRecorder()
    monkeypatch.setattr("ladder.gateway.resolve.refresh_request", recorder)
    monkeypatch.setattr("ladder.services.failures.refresh_request", recorder)
    return recorder


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    frozen = Clock()
    monkeypatch.setattr("ladder.gateway.clock.current_time", frozen)
    return frozen


@pytest.fixture
def token() -> str:
    """A token with both scopes."""
    return gateway_token_create(name="gateway", scope_resolve=True, scope_report=True)[1]


@pytest.fixture
def resolve_only_token() -> str:
    return gateway_token_create(name="resolver", scope_resolve=True, scope_report=False)[1]


@pytest.fixture
def report_only_token() -> str:
    return gateway_token_create(name="reporter", scope_resolve=False, scope_report=True)[1]


class Api:
    """The test client speaking JSON with a bearer token."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.client = client
        self.token = token

    def headers(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, *, token: str | None = "default") -> TestResponse:
        chosen = self.token if token == "default" else token
        return self.client.get(path, headers=self.headers(chosen))

    def post(
        self,
        path: str,
        body: Any,
        *,
        token: str | None = "default",
        content_type: str = "application/json",
        raw: bool = False,
    ) -> TestResponse:
        chosen = self.token if token == "default" else token
        data = body if raw else json.dumps(body)
        return self.client.post(path, data=data, content_type=content_type, headers=self.headers(chosen))


@pytest.fixture
def gateway(client: Client, token: str) -> Api:
    return Api(client, token)


def _validator_for(pointer: str) -> Draft202012Validator:
    document = openapi_document()
    # The document itself is the root: its $refs (#/components/…) resolve inside it.
    return Draft202012Validator({**document, "$ref": pointer})


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def response_schema_pointer(path: str, method: str, status: int) -> str:
    document = openapi_document()
    responses = document["paths"][path][method.lower()]["responses"]
    assert str(status) in responses, f"{method} {path}: status {status} is not documented"
    media = _escape("application/json")
    return f"#/paths/{_escape(path)}/{method.lower()}/responses/{status}/content/{media}/schema"


def assert_schema(response: TestResponse, path: str, method: str) -> Any:
    """The response body, after checking it against the OpenAPI schema of (path, method, status)."""
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content)
    validator = _validator_for(response_schema_pointer(path, method, response.status_code))
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    return body


def assert_error(
    response: TestResponse, path: str, method: str, status: int, code: str | None = None
) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = assert_schema(response, path, method)
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]


def make_connection(
    connection_id: str,
    provider: str = "claude",
    auth_type: str | None = "oauth",
    *,
    windows: list[dict[str, Any]] | None = None,
    fetched_at: datetime | None = NOW,
    bump: bool = True,
    **fields: Any,
) -> m.Connection:
    """A connection, with a reading of these windows (None: no reading)."""
    connection = m.Connection.objects.create(
        id=connection_id, provider=provider, auth_type=auth_type, **fields
    )
    if windows is not None and fetched_at is not None:
        reading = m.QuotaReading.objects.create(connection=connection, fetched_at=fetched_at)
        for position, window in enumerate(windows):
            m.QuotaWindow.objects.create(reading=reading, position=position, **window)
    if bump:
        bump_state_version()
    return connection


def set_config(**values: Any) -> None:
    from ladder.services.state import configuration_update

    configuration_update(**values)
