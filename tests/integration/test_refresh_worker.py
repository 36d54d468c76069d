"""A real Celery worker and beat (subprocesses) against a Redis and a database of their own and
the fake upstream: the beat entry fires, readings land, a draining plan latches and comes back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.fakeupstream import FakeUpstream
from tests.reliability.processes import (
    Database,
    Processes,
    RedisServer,
    manage,
    process_env,
    run_database,
    seed,
)

pytestmark = pytest.mark.slow

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

READINGS_SQL = """
SELECT r.connection_id, r.id, r.verifiable, w.name, w.remaining_pct, w.latched
FROM ladder_quotareading r LEFT JOIN ladder_quotawindow w ON w.reading_id = r.id
ORDER BY r.connection_id, r.fetched_at, r.id, w.position
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[dict[str, str], Database, RedisServer]]:
    """The processes' environment (own Redis, own database, migrated), the database and the Redis."""
    with RedisServer(tmp_path) as redis_server, run_database(tmp_path) as database:
        env = process_env(database.env, redis_url=redis_server.url(), LADDER_REFRESH_BEAT_S="1")
        manage(env, "migrate", "--noinput", "-v", "0")
        yield env, database, redis_server


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
    upstream: FakeUpstream, stack: tuple[dict[str, str], Database, RedisServer], tmp_path: Path
) -> None:
    env, database, _ = stack
    seed(
        env,
        {
            "config": {"refresh_interval_s": 1},
            "connections": [
                {
                    "id": cid,
                    "provider": provider,
                    "auth_type": auth,
                    "base_url": upstream.url_for(kind, cid),
                    "credential": "token-" + cid,
                }
                for cid, kind, provider, auth in CONNECTIONS
            ],
        },
    )
    control = upstream.control()
    # 100 % → 0 % over 8 s, spent for 6 s more, then reset to 100 % (and again, every 14 s).
    control.drain("claude-oauth", connection=DRAINING, drain_s=8, reset_after_s=6)
    control.error("zai-glm", "http_503", connection="it-broken")

    processes = Processes(tmp_path)
    try:
        processes.worker(env, concurrency=2)
        processes.beat(env)

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
        claims = database.query("SELECT COUNT(*) FROM ladder_connection WHERE claimed_until IS NOT NULL")
        assert claims[0][0] <= len(CONNECTIONS)  # held only while a refresh runs
    finally:
        processes.stop()
        control.close()
