"""A running ladder (pytest-django's live_server) with a small catalog, and real tokens for it."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import pytest
from django.db import connection

from ladder import models as m
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.state import bump_state_version
from ladder.services.tokens import gateway_token_create
from ladder_client import Candidate, LadderClient
from tests.conftest import TEST_HOTSTATE_PREFIX
from tests.ladder_client.fake_openai import FakeOpenAI, run_fake_openai

# LiteLLM fetches its price map from the internet at import unless told to use its local copy.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

PLAN = "claude-max"  # a Claude Code OAuth plan: subscription, hard-stop (the name docs/LITELLM.md uses)
CHEAP = "openai-key"  # an OpenAI API key: metered, on a cheap model
PLAN_MODEL = ("claude", "claude-sonnet-4-5")
CHEAP_MODEL = ("openai", "gpt-4o-mini")
CANDIDATES = (
    Candidate(*PLAN_MODEL, connection_id=None, allowed_connection_ids=(PLAN,)),
    Candidate(*CHEAP_MODEL, connection_id=None, allowed_connection_ids=(CHEAP,)),
)


def claude_headers(*, utilization: float, reset_at: datetime, status: str = "allowed") -> dict[str, str]:
    return {
        "anthropic-ratelimit-unified-5h-utilization": str(utilization),
        "anthropic-ratelimit-unified-5h-reset": reset_at.isoformat(),
        "anthropic-ratelimit-unified-5h-status": status,
    }


@dataclass
class RefreshRecorder:
    """Refresh requests recorded instead of queued: no Celery task reaches the shared broker."""

    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, *, connection_ids: list[str]) -> list[str]:
        self.calls.append(list(connection_ids))
        return list(connection_ids)


@dataclass(frozen=True)
class Ladder:
    url: str
    token: str  # scopes resolve and report
    refreshes: RefreshRecorder
    # Held while the live server answers a request (SQLite): hold it to read the database from the
    # test while a process keeps calling the ladder.
    database_lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, **options: Any) -> LadderClient:
        return LadderClient(self.url, self.token, **options)


def seed_catalog() -> None:
    """Exactly two billing rows and two models (the seeded catalog may or may not be there)."""
    m.ModelCatalogEntry.objects.all().delete()
    m.BillingCatalogEntry.objects.all().delete()
    m.BillingCatalogEntry.objects.create(
        provider="claude", auth_type="oauth", billing="subscription", overage="hard-stop"
    )
    m.BillingCatalogEntry.objects.create(
        provider="openai", auth_type="apikey", billing="metered", overage="meters-to-paid"
    )
    m.ModelCatalogEntry.objects.create(
        provider=PLAN_MODEL[0],
        model=PLAN_MODEL[1],
        input_usd_per_mtok=3,
        output_usd_per_mtok=15,
        categories=["coding", "chat"],
        position=0,
    )
    m.ModelCatalogEntry.objects.create(
        provider=CHEAP_MODEL[0],
        model=CHEAP_MODEL[1],
        input_usd_per_mtok="0.15",
        output_usd_per_mtok="0.6",
        categories=["chat"],
        position=1,
    )
    m.Connection.objects.create(id=PLAN, provider="claude", auth_type="oauth", position=0)
    m.Connection.objects.create(id=CHEAP, provider="openai", auth_type="apikey", position=1)
    bump_state_version()


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@contextmanager
def one_request_at_a_time(live_server: Any) -> Iterator[threading.Lock]:
    """On SQLite the test database lives in memory, one connection that every thread of the live
    server shares; concurrent requests there fail with "database table is locked" where a real
    SQLite file waits for its lock. The gateway reports while it routes, so the live server
    answers one request at a time (each is read to its end under the lock), which it yields."""
    lock = threading.Lock()
    if connection.vendor != "sqlite":
        yield lock
        return
    server = live_server.thread.httpd
    app: WsgiApp = server.get_app()

    def serialized(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            answer = app(environ, start_response)
            try:
                return [b"".join(answer)]
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()

    server.set_app(serialized)
    try:
        yield lock
    finally:
        server.set_app(app)


@pytest.fixture
def ladder(
    live_server: Any, monkeypatch: pytest.MonkeyPatch, settings: Any, transactional_db: None
) -> Iterator[Ladder]:
    # The escalation log keeps each auto id's last rung in Redis, which outlives the flushed
    # database: every test starts from none, under a prefix of its own (removed with the run's).
    settings.LADDER_HOTSTATE_PREFIX = f"{TEST_HOTSTATE_PREFIX}:{uuid.uuid4().hex[:12]}"
    recorder = RefreshRecorder()
    monkeypatch.setattr("ladder.gateway.resolve.refresh_request", recorder)
    monkeypatch.setattr("ladder.services.failures.refresh_request", recorder)
    # A flushed database starts its state version again: never serve another test's snapshot.
    snapshot_cache.clear()
    seed_catalog()
    _, token = gateway_token_create(name="gateway", scope_resolve=True, scope_report=True)
    with one_request_at_a_time(live_server) as lock:
        yield Ladder(url=live_server.url, token=token, refreshes=recorder, database_lock=lock)
    snapshot_cache.clear()


class CountingTransport(httpx.HTTPTransport):
    """A real HTTP transport that counts the requests it sends (retries included)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """An OpenAI-compatible upstream in this process (the plan, the cheap key, the paid model)."""
    with run_fake_openai() as running:
        yield running


@pytest.fixture
def gateway(ladder: Ladder) -> Iterator[LadderClient]:
    """A client of the running ladder, closed after its test: a connection it keeps open keeps a
    live-server thread, and that thread's database session, alive past the test run."""
    with ladder.client() as client:
        yield client
