"""Schemathesis against the real app's /api/v1/openapi.json, database-backed, with a token of both scopes.

Every generated request, valid or not (schemathesis's positive and negative modes), must get a documented
status and a body that matches the schema: never a 5xx, always the one error shape. Positive cases reach
past the 404s and 422s by naming connections, models and request ids that exist.

The default run fuzzes each operation with a few dozen examples; HYPOTHESIS_PROFILE=nightly (make soak)
with many more.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Iterator
from datetime import timedelta

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.generation.modes import GenerationMode

from ladder import models as m
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.state import bump_state_version
from ladder.services.tokens import gateway_token_create
from tests.conftest import examples
from tests.gateway.conftest import RefreshRecorder

pytestmark = pytest.mark.django_db

SCHEMA_PATH = "/api/v1/openapi.json"
KNOWN_CONNECTIONS = ("claude-max", "codex-plus", "openrouter-key")
KNOWN_MODELS = ("claude-sonnet-4-5", "gpt-5-codex", "deepseek-chat")


def seed_state() -> None:
    """A small curated state: plans with live readings, a metered key, priced models, a budget."""
    now = timezone.now()
    config = m.LadderConfiguration.load()
    config.rung_budget_usd = {"cheap": 5.0, "premium": 1.0}
    config.save()
    for provider, auth_type, billing, overage in (
        ("claude", "oauth", "subscription", "hard-stop"),
        ("codex", "oauth", "subscription", "hard-stop"),
        ("openrouter", "apikey", "metered", "meters-to-paid"),
    ):
        m.BillingCatalogEntry.objects.update_or_create(
            provider=provider, auth_type=auth_type, defaults={"billing": billing, "overage": overage}
        )
    for position, (provider, model, price) in enumerate(
        (
            ("claude", "claude-sonnet-4-5", "3.00"),
            ("codex", "gpt-5-codex", "1.25"),
            ("openrouter", "deepseek-chat", "0.27"),
        )
    ):
        m.ModelCatalogEntry.objects.update_or_create(
            provider=provider,
            model=model,
            defaults={
                "input_usd_per_mtok": price,
                "output_usd_per_mtok": price,
                "position": position,
                "categories": ["coding", "chat"],
            },
        )
    for position, (connection_id, provider, auth_type) in enumerate(
        (
            ("claude-max", "claude", "oauth"),
            ("codex-plus", "codex", "oauth"),
            ("openrouter-key", "openrouter", "apikey"),
        )
    ):
        connection = m.Connection.objects.create(
            id=connection_id, provider=provider, auth_type=auth_type, position=position
        )
        if auth_type == "oauth":
            reading = m.QuotaReading.objects.create(connection=connection, fetched_at=now)
            m.QuotaWindow.objects.create(
                reading=reading, position=0, name="5h", remaining_pct=40.0, reset_at=now + timedelta(hours=3)
            )
    bump_state_version()


@pytest.fixture
def in_test_transaction() -> Iterator[None]:
    """Requests served straight by the WSGI handler keep the test's database connection, as Django's test
    client does: Django would close it at each request's start and end (on PostgreSQL, the test's
    transaction with it)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch, in_test_transaction: None) -> Iterator[str]:
    # Refreshes are recorded, not queued: the shared broker stays untouched.
    recorder = RefreshRecorder()
    monkeypatch.setattr("ladder.gateway.resolve.refresh_request", recorder)
    monkeypatch.setattr("ladder.services.failures.refresh_request", recorder)
    snapshot_cache.clear()
    seed_state()
    yield gateway_token_create(name="fuzz", scope_resolve=True, scope_report=True, value=TOKEN)[1]
    snapshot_cache.clear()


# The schema as the running app serves it (the openapi view reads no table: loading at import is safe).
# One test per operation; schemathesis's fixture-loaded schema needs a pytest older than ours.
# Two statuses of the contract that schemathesis's defaults do not expect (API.md): a schema-valid request
# that names rows the ladder does not know is "understood but not acceptable" (422), and a batch over 1,000
# events is refused like an oversized body (413).
# The bearer token goes through schemathesis's own auth (its row is created in the test database), so
# that it knows which requests carry it: a header it sends itself never undoes one of its negative cases.
TOKEN = f"olr_fuzz_{secrets.token_hex(16)}"
CONFIG = schemathesis.Config.from_dict(
    {
        "auth": {"openapi": {"bearer": {"bearer": TOKEN}}},
        # The API refuses NUL in any string with a clear 400 (no database column holds one; the
        # schema's description says so): generating it would only ever test that one refusal.
        "generation": {"allow-x00": False},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ["2xx", 401, 403, 404, 409, 422, 429]},
            "negative_data_rejection": {
                "expected-statuses": [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]
            },
        },
    }
)
schema = schemathesis.openapi.from_wsgi(SCHEMA_PATH, WSGIHandler(), config=CONFIG)


def _pick(value: object, choices: tuple[str, ...]) -> str | None:
    """One of `choices`, or None one time in four: a deterministic function of the generated value, so that
    Hypothesis replays and shrinks it (Python's own hash() changes between runs)."""
    index = zlib.crc32(repr(value).encode()) % (len(choices) + 1)
    return choices[index] if index < len(choices) else None


def aim(case: schemathesis.Case) -> None:
    """Point most positive cases at rows that exist, so that they reach the service behind the 404 or 422."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return
    if case.path_parameters and "connection_id" in case.path_parameters:
        known = _pick(case.path_parameters["connection_id"], KNOWN_CONNECTIONS)
        if known is not None:
            case.path_parameters["connection_id"] = known
    if case.operation.path == "/api/v1/usage" and isinstance(case.body, dict):
        events = case.body.get("events") if "events" in case.body else [case.body]
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict) and _pick(event.get("request_id"), KNOWN_CONNECTIONS) is not None:
                event["connection_id"] = _pick(event.get("request_id"), KNOWN_CONNECTIONS)
                event["model"] = _pick(event.get("request_id"), KNOWN_MODELS)


@settings(max_examples=examples(25, nightly=1000), suppress_health_check=list(HealthCheck))
@schema.parametrize()
def test_it_answers_every_generated_request_as_documented(case: schemathesis.Case, token: str) -> None:
    aim(case)
    case.call_and_validate()
