"""Fixtures of real processes (see ``tests/reliability/processes.py``); whatever a test does, every
process, Redis server and proxy it started is gone when it ends.

- ``processes``: start web (gunicorn), Celery worker and beat processes; all stopped after the test
  (their logs are printed then, shown by pytest when the test failed).
- ``redis_server``: an own ``redis-server`` on a free port (never the shared one on 6379).
- ``database``: an empty database of the test's own (SQLite file, or PostgreSQL database when
  DATABASE_URL names PostgreSQL, dropped after the test).
- ``ladder_env``: the processes' environment for that database and Redis, database migrated.
- ``db_proxy``: a ``TcpProxy`` in front of the test's PostgreSQL server (PostgreSQL runs only).
- ``stack``: ``ladder_env``, ``database``, ``processes`` and the fake upstream (``upstream``,
  ``control`` of tests/conftest.py) in one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl

# The API tests' in-process fixtures (a JSON client with a token, a frozen API clock, refresh
# requests recorded instead of queued) for the clock-edge tests; the last two are autouse there.
from tests.gateway.conftest import _fresh_snapshot_cache, clock, gateway, refreshes, token  # noqa: F401
from tests.reliability.processes import (
    Database,
    Processes,
    RedisServer,
    TcpProxy,
    manage,
    process_env,
    run_database,
)

GATEWAY_TOKEN = "olr_reliability_gateway_token_0123456789"
AUTH = {"Authorization": f"Bearer {GATEWAY_TOKEN}", "X-Forwarded-Proto": "https"}
TOKEN_SPEC = {"name": "gateway", "value": GATEWAY_TOKEN, "scope_resolve": True, "scope_report": True}


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.stop()
        print(running.logs())


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path) as server:
        yield server


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    with run_database(tmp_path) as created:
        yield created


@pytest.fixture
def ladder_env(database: Database, redis_server: RedisServer) -> dict[str, str]:
    env = process_env(database.env, redis_url=redis_server.url())
    manage(env, "migrate", "--noinput", "-v", "0")
    return env


@pytest.fixture
def db_proxy(database: Database) -> Iterator[TcpProxy]:
    if database.postgres_url is None:
        pytest.skip("the TCP proxy stands in front of PostgreSQL; this run uses SQLite")
    with TcpProxy(*database.target()) as proxy:
        yield proxy


@dataclass(frozen=True)
class Stack:
    env: dict[str, str]
    database: Database
    processes: Processes
    upstream: FakeUpstream
    control: FakeUpstreamControl


@pytest.fixture
def stack(
    ladder_env: dict[str, str],
    database: Database,
    processes: Processes,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
) -> Stack:
    return Stack(ladder_env, database, processes, upstream, control)
