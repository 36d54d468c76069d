"""A real Celery worker and beat (subprocesses) against the real Redis, a database of their own and
the fake upstream: the beat entry fires, readings land, a draining plan latches and comes back."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import pytest
import redis
from cryptography.fernet import Fernet

from ladder.fakeupstream import FakeUpstream, run_fake_upstream

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TEST_REDIS_URL = "redis://127.0.0.1:6379/15"
WAIT_S = 50.0

# (connection id, fixture kind, provider, auth_type)
CONNECTIONS = (
    ("it-claude", "claude-oauth", "claude", "oauth"),
    ("it-codex", "codex-chatgpt", "codex", "oauth"),
    ("it-copilot", "copilot", "copilot", "oauth"),
    ("it-zai", "zai-glm", "zai", "apikey"),
    ("it-kimi", "kimi-coding", "kimi-coding", "apikey"),
    ("it-minimax", "minimax-coding", "minimax", "apikey"),
    ("it-openrouter", "openrouter", "openrouter", "apikey"),
    ("it-broken", "zai-glm", "zai", "apikey"),  # its upstream answers 503 throughout
)
DRAINING = "it-claude"

SEED = """
import json, sys
import django
django.setup()
from ladder.models import Connection, LadderConfiguration
spec = json.loads(sys.argv[1])
LadderConfiguration.load()
LadderConfiguration.objects.filter(pk=1).update(refresh_interval_s=spec["refresh_interval_s"])
for cid, kind, provider, auth_type, base_url in spec["connections"]:
    connection = Connection(id=cid, provider=provider, auth_type=auth_type, base_url=base_url)
    connection.set_credential("token-" + cid)
    connection.save()
"""

READINGS_SQL = """
SELECT r.connection_id, r.id, r.verifiable, w.name, w.remaining_pct, w.latched
FROM ladder_quotareading r LEFT JOIN ladder_quotawindow w ON w.reading_id = r.id
ORDER BY r.connection_id, r.fetched_at, r.id, w.position
"""


@dataclass
class Database:
    """The subprocesses' database: a SQLite file, or a PostgreSQL database of this run's own."""

    env: dict[str, str]
    sqlite_path: Path | None = None
    postgres_url: str | None = None

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.sqlite_path is not None:
            with sqlite3.connect(self.sqlite_path, timeout=20) as conn:
                return list(conn.execute(sql).fetchall())
        import psycopg

        assert self.postgres_url is not None
        with psycopg.connect(self.postgres_url) as conn:
            return list(conn.execute(sql).fetchall())


@dataclass
class Processes:
    procs: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> None:
        log = log_dir / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append((name, proc, log))

    def check_alive(self) -> None:
        for name, proc, _ in self.procs:
            assert proc.poll() is None, f"{name} exited with {proc.returncode}\n{self.logs()}"

    def logs(self, tail: int = 4000) -> str:
        return "\n".join(
            f"--- {name} ---\n{log.read_text(errors='replace')[-tail:]}"
            for name, _, log in self.procs
            if log.exists()
        )

    def stop(self) -> None:
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _, proc, _ in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            _signal_group(proc, signal.SIGKILL)  # the worker's pool children too
            proc.wait(timeout=5)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with run_fake_upstream() as running:
        yield running


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    run_id = uuid.uuid4().hex[:12]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "omniroute.settings",
        "LADDER_CREDENTIAL_KEY": Fernet.generate_key().decode(),
        "REDIS_URL": TEST_REDIS_URL,
        "CELERY_BROKER_URL": TEST_REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": f"ladder-it-{run_id}",
        "LADDER_HOTSTATE_PREFIX": f"test-it:{run_id}",
        "CACHE_KEY_PREFIX": f"test-it:{run_id}",
        "LADDER_REFRESH_BEAT_S": "1",
        "LADDER_UPSTREAM_BASE_URL": "",
        "PYTHONUNBUFFERED": "1",
        "LOG_LEVEL": "INFO",
    }
    main_url = os.environ.get("DATABASE_URL", "")
    if main_url.startswith(("postgres://", "postgresql://")):
        import psycopg

        name = f"ladder_it_{run_id}"
        with psycopg.connect(main_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = urlunparse(urlparse(main_url)._replace(path=f"/{name}"))
        env["DATABASE_URL"] = url
        try:
            yield Database(env, postgres_url=url)
        finally:
            with psycopg.connect(main_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        env.pop("DATABASE_URL", None)
        path = tmp_path / "worker.sqlite3"
        env["SQLITE_PATH"] = str(path)
        yield Database(env, sqlite_path=path)
    client = redis.Redis.from_url(TEST_REDIS_URL)
    queue = env["CELERY_TASK_DEFAULT_QUEUE"]
    keys = [*client.scan_iter(f"test-it:{run_id}:*"), queue, *client.scan_iter(f"_kombu.binding*.{queue}")]
    client.delete(*keys)
    client.close()


def run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"


def windows_by_connection(database: Database) -> dict[str, list[tuple[bool, dict[str, tuple[float, bool]]]]]:
    """Connection id → its readings in order: (verifiable, {window name: (remaining_pct, latched)})."""
    readings: dict[str, dict[int, tuple[bool, dict[str, tuple[float, bool]]]]] = {}
    for cid, rid, verifiable, name, pct, latched in database.query(READINGS_SQL):
        entry = readings.setdefault(cid, {}).setdefault(rid, (bool(verifiable), {}))
        if name is not None:
            entry[1][name] = (float(pct), bool(latched))
    return {cid: list(by_id.values()) for cid, by_id in readings.items()}


def crossed_and_came_back(readings: list[tuple[bool, dict[str, tuple[float, bool]]]]) -> tuple[bool, bool]:
    """(a reading at or below the cutoff latched "5h"; a later one above the floor cleared it)."""
    latched_at = next(
        (i for i, (_, w) in enumerate(readings) if "5h" in w and w["5h"][0] <= 2 and w["5h"][1]), None
    )
    if latched_at is None:
        return False, False
    back = any("5h" in w and w["5h"][0] > 5 and not w["5h"][1] for _, w in readings[latched_at + 1 :])
    return True, back


def test_it_lands_readings_from_a_real_worker_and_latches_a_draining_plan(
    upstream: FakeUpstream, database: Database, tmp_path: Path
) -> None:
    env = database.env
    python = sys.executable
    run([python, "manage.py", "migrate", "--noinput", "-v", "0"], env)
    spec = {
        "refresh_interval_s": 1,
        "connections": [
            [cid, kind, provider, auth, upstream.url_for(kind, cid)]
            for cid, kind, provider, auth in CONNECTIONS
        ],
    }
    run([python, "-c", SEED, json.dumps(spec)], env)
    control = upstream.control()
    # 100 % → 0 % over 8 s, spent for 6 s more, then reset to 100 % (and again, every 14 s).
    control.drain("claude-oauth", connection=DRAINING, drain_s=8, reset_after_s=6)
    control.error("zai-glm", "http_503", connection="it-broken")

    processes = Processes()
    celery = [python, "-m", "celery", "-A", "omniroute"]
    try:
        processes.start(
            "worker",
            [
                *celery,
                "worker",
                "--pool",
                "prefork",
                "-c",
                "2",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "INFO",
            ],
            env,
            tmp_path,
        )
        processes.start("beat", [*celery, "beat", "--loglevel", "INFO"], env, tmp_path)

        deadline = time.monotonic() + WAIT_S
        readings: dict[str, list[tuple[bool, dict[str, tuple[float, bool]]]]] = {}
        latched = back = False
        while time.monotonic() < deadline:
            processes.check_alive()
            readings = windows_by_connection(database)
            latched, back = crossed_and_came_back(readings.get(DRAINING, []))
            if back and len(readings) == len(CONNECTIONS) - 1:
                break
            time.sleep(0.5)

        summary = {cid: [w for _, w in rs][-3:] for cid, rs in readings.items()}
        assert set(readings) == {cid for cid, *_ in CONNECTIONS} - {"it-broken"}, (summary, processes.logs())
        assert all(verifiable for rs in readings.values() for verifiable, _ in rs), summary
        assert latched, (readings.get(DRAINING), processes.logs())
        assert back, (readings.get(DRAINING), processes.logs())
        processes.check_alive()  # no upstream fault took a process down

        (beat_rows,) = database.query("SELECT COUNT(*) FROM ladder_heartbeat WHERE name = 'beat'")
        assert beat_rows == (1,)
        (error,) = database.query("SELECT last_poll_error FROM ladder_connection WHERE id = 'it-broken'")
        assert str(error[0]).startswith("transient: upstream_error (HTTP 503)")
        hot = redis.Redis.from_url(TEST_REDIS_URL)
        prefix = env["LADDER_HOTSTATE_PREFIX"]
        assert hot.get(f"{prefix}:last_beat_at") is not None
        entry = json.loads(hot.get(f"{prefix}:reading:{DRAINING}") or b"{}")
        assert entry.get("connection_id") == DRAINING
        hot.close()
        claims = database.query("SELECT COUNT(*) FROM ladder_connection WHERE claimed_until IS NOT NULL")
        assert claims[0][0] <= len(CONNECTIONS)  # held only while a refresh runs
    finally:
        processes.stop()
        control.close()
