"""The database locked or gone, for real, under a gunicorn web process.

PostgreSQL: the web process reaches its database through a TCP proxy that the test pauses (every
open connection reset, new ones refused). A write caught mid-transaction (held on a row lock that
the test takes first) is cut off with its connection: nothing of it is stored.

SQLite: another connection holds the write lock (``BEGIN IMMEDIATE``) with a 1 s busy timeout for
the web process, then locks the file outright (``locking_mode=EXCLUSIVE``).

Either way: a clear 503 in the API's error shape with Retry-After, ``/readyz`` 503 when the database
cannot be reached, no partial write (a usage batch of 10 events is stored whole or not at all, a
failure report leaves no half state), and recovery when the database is back.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.reliability.conftest import AUTH, TOKEN_SPEC
from tests.reliability.processes import Database, Processes, TcpProxy, postgres_requested, seed, wait_until

pytestmark = pytest.mark.slow

PAID_MODEL = "anthropic/claude-sonnet-4.5"
COSTS = [f"0.{index:02d}0001" for index in range(1, 11)]  # 10 events, distinct micro-dollars
SPEC: dict[str, Any] = {
    "config": {"max_reading_age_s": 3600, "rung_budget_usd": {"premium": 1000}},
    "connections": [
        {"id": "plan", "provider": "claude", "auth_type": "oauth", "next_refresh_at": "2099-01-01T00:00:00Z"},
        {
            "id": "paid",
            "provider": "openrouter",
            "auth_type": "apikey",
            "next_refresh_at": "2099-01-01T00:00:00Z",
        },
    ],
    "readings": [
        {"connection_id": "plan", "windows": [{"name": "5h", "remaining_pct": 60, "reset_in_s": 7200}]}
    ],
    "tokens": [TOKEN_SPEC],
}


HOLD_LOCK = 6006
HOLD_TRIGGERS = f"""
CREATE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock({HOLD_LOCK}); RETURN NULL; END $$;
CREATE TRIGGER test_hold AFTER INSERT ON ladder_usageevent FOR EACH STATEMENT EXECUTE FUNCTION test_hold();
CREATE TRIGGER test_hold AFTER INSERT ON ladder_failureevent FOR EACH STATEMENT EXECUTE FUNCTION test_hold();
"""
DROP_HOLD_TRIGGERS = "DROP FUNCTION test_hold() CASCADE"


def usage_batch(prefix: str) -> dict[str, Any]:
    return {
        "events": [
            {
                "request_id": f"{prefix}-{i}",
                "connection_id": "paid",
                "model": PAID_MODEL,
                "cost_usd": float(cost),
            }
            for i, cost in enumerate(COSTS)
        ]
    }


def exhaustion_report() -> dict[str, Any]:
    """A Claude 429 naming its spent 5-hour window (the adapter classifies it quota_exhausted)."""
    reset = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
    return {
        "status": 429,
        "headers": {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-reset": str(reset),
            "anthropic-ratelimit-unified-5h-utilization": "1.0",
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
        },
        "model": "claude-sonnet-4-5",
    }


def assert_unavailable(response: httpx.Response) -> float:
    """The API's 503: error shape, code, Retry-After. Returns the Retry-After seconds."""
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "database_unavailable", response.text
    assert set(response.json()["error"]) == {"code", "message", "field"}
    return float(response.headers["Retry-After"])


def state_of(database: Database) -> dict[str, Any]:
    """What a usage batch or a failure report may change, read directly (not through the proxy)."""
    return {
        "usage": database.scalar("SELECT COUNT(*) FROM ladder_usageevent"),
        "spend": Decimal(str(database.scalar("SELECT COALESCE(SUM(cost_usd), 0) FROM ladder_usageevent"))),
        "failures": database.scalar("SELECT COUNT(*) FROM ladder_failureevent"),
        "plan_readings": database.scalar(
            "SELECT COUNT(*) FROM ladder_quotareading WHERE connection_id = 'plan'"
        ),
        "plan": database.query(
            "SELECT cooldown_until, backoff_level, enabled FROM ladder_connection WHERE id = 'plan'"
        ),
    }


def premium_spent(web: httpx.Client) -> Decimal:
    answer = web.get("/api/v1/connections")
    assert answer.status_code == 200, answer.text
    return Decimal(str(answer.json()["budgets"]["premium"]["spent_usd"]))


def post_in_thread(web: httpx.Client, path: str, body: Any) -> tuple[threading.Thread, list[httpx.Response]]:
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(web.post(path, json=body)), daemon=True)
    thread.start()
    return thread, answers


@pytest.mark.skipif(
    not postgres_requested(), reason="the TCP proxy stands in front of PostgreSQL; this run uses SQLite"
)
def test_it_answers_503_and_writes_nothing_half_when_postgresql_goes_away(
    ladder_env: dict[str, str], database: Database, db_proxy: TcpProxy, processes: Processes
) -> None:
    seed(ladder_env, SPEC)
    web_process = processes.web({**ladder_env, **database.env_through(db_proxy)})
    web = httpx.Client(base_url=web_process.url(), headers=AUTH, timeout=30)
    before = web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"})
    assert before.status_code == 200, before.text
    empty = state_of(database)

    # Mid-write: a trigger makes each write wait, inside its transaction, once its last row is in
    # (the 10 usage rows; the failure's latched reading, cooldown and event), on a lock the test
    # holds; then every connection drops.
    with database.connect() as direct:
        direct.execute(HOLD_TRIGGERS)
    holder = database.connect()
    holder.execute("SELECT pg_advisory_lock(%s)", (HOLD_LOCK,))
    usage_thread, usage_answer = post_in_thread(web, "/api/v1/usage", usage_batch("cut"))
    failure_thread, failure_answer = post_in_thread(
        web, "/api/v1/connections/plan/failures", exhaustion_report()
    )
    waiting_sql = (
        "SELECT COUNT(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    wait_until(
        lambda: database.scalar(waiting_sql) == 2, timeout_s=20, what="both writes blocked mid-transaction"
    )
    paused = time.monotonic()
    db_proxy.pause()
    usage_thread.join(timeout=30)
    failure_thread.join(timeout=30)
    cut_answer_s = time.monotonic() - paused
    holder.close()  # the lock goes with the session
    retry_after_s = assert_unavailable(usage_answer[0])
    assert_unavailable(failure_answer[0])
    # The cut sessions end without a COMMIT: PostgreSQL rolls each one back whole.
    wait_until(lambda: database.scalar(waiting_sql) == 0, timeout_s=20, what="the cut sessions to end")
    assert state_of(database) == empty
    with database.connect() as direct:
        direct.execute(DROP_HOLD_TRIGGERS)

    # Gone: every API call is a clear 503; the process itself still answers.
    started = time.monotonic()
    assert_unavailable(web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"}))
    resolve_503_s = time.monotonic() - started
    assert_unavailable(web.post("/api/v1/usage", json=usage_batch("while-down")))
    assert_unavailable(web.get("/api/v1/connections"))
    ready = web.get("/readyz")
    assert ready.status_code == 503, ready.text
    assert ready.json()["status"] == "unavailable"
    assert ready.json()["database"].startswith("down")
    assert web.get("/healthz").status_code == 200
    assert state_of(database) == empty

    resumed = time.monotonic()
    db_proxy.resume()
    failed_after_resume = 0

    def resolves() -> bool:
        nonlocal failed_after_resume
        answer = web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"})
        failed_after_resume += answer.status_code != 200
        return answer.status_code == 200

    wait_until(resolves, timeout_s=30, interval_s=0.05, what="resolve to answer 200 again")
    recover_s = time.monotonic() - resumed
    assert (
        web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"}).json()["pool"]
        == (before.json()["pool"])
    )
    wait_until(lambda: web.get("/readyz").status_code == 200, timeout_s=10, what="readyz 200")
    assert premium_spent(web) == 0  # whatever keeps the budgets, nothing of the cut batch reached it
    for prefix in ("cut", "while-down"):
        assert web.post("/api/v1/usage", json=usage_batch(prefix)).status_code == 200
    assert web.post("/api/v1/connections/plan/failures", json=exhaustion_report()).json()[
        "classification"
    ] == ("quota_exhausted")
    after = state_of(database)
    assert after["usage"] == 20
    assert after["spend"] == 2 * sum(map(Decimal, COSTS))
    assert premium_spent(web) == 2 * sum(map(Decimal, COSTS))
    assert after["failures"] == 1
    assert after["plan_readings"] == 2  # the failure's latched copy of the latest reading
    assert after["plan"][0][0] is not None  # cooling down
    print(
        f"FIGURES postgres_gone cut_answer_s={cut_answer_s:.3f} retry_after_s={retry_after_s:g} "
        f"resolve_503_s={resolve_503_s:.3f} recover_s={recover_s:.3f} "
        f"failed_requests_after_resume={failed_after_resume} proxy_refused={db_proxy.refused}"
    )


@pytest.mark.skipif(
    postgres_requested(), reason="SQLite's file locks; this run uses PostgreSQL (see the proxy test)"
)
def test_it_answers_503_and_writes_nothing_half_when_sqlite_is_locked(
    ladder_env: dict[str, str], database: Database, processes: Processes
) -> None:
    assert database.sqlite_path is not None
    seed(ladder_env, SPEC)
    # DB_CONN_MAX_AGE=0: the lock-out below takes an exclusive lock, which no process can get while
    # another keeps a WAL connection open between requests.
    web_process = processes.web({**ladder_env, "SQLITE_TIMEOUT_S": "1", "DB_CONN_MAX_AGE": "0"})
    web = httpx.Client(base_url=web_process.url(), headers=AUTH, timeout=30)
    before = web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"})
    assert before.status_code == 200, before.text
    empty = state_of(database)

    # Another writer holds the write lock: writes wait 1 s and get a 503; reads go on (WAL).
    holder = sqlite3.connect(database.sqlite_path, isolation_level=None, timeout=5)
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    assert_unavailable(web.post("/api/v1/usage", json=usage_batch("locked")))
    write_503_s = time.monotonic() - started
    assert_unavailable(web.post("/api/v1/connections/plan/failures", json=exhaustion_report()))
    reads_during_write_lock = web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"})
    assert reads_during_write_lock.status_code == 200
    assert reads_during_write_lock.json()["pool"] == before.json()["pool"]
    assert web.get("/readyz").status_code == 200  # the database answers; only writes wait
    assert state_of(database) == empty
    holder.execute("ROLLBACK")
    holder.close()

    # Then locked out: no connection can even open the file. The writes refused above left nothing
    # open in the web process (a refused write's cursor used to linger until the garbage collector
    # freed it, and the exclusive lock below waited for it).
    holder = sqlite3.connect(database.sqlite_path, isolation_level=None, timeout=5)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT COUNT(*) FROM ladder_connection").fetchone()
    started = time.monotonic()
    retry_after_s = assert_unavailable(web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"}))
    locked_out_503_s = time.monotonic() - started
    assert_unavailable(web.post("/api/v1/usage", json=usage_batch("locked")))
    ready = web.get("/readyz")
    assert ready.status_code == 503, ready.text
    assert ready.json()["database"].startswith("down")
    holder.execute("ROLLBACK")
    holder.close()
    assert state_of(database) == empty
    released = time.monotonic()

    answer = web.post("/api/v1/usage", json=usage_batch("locked"))
    recover_s = time.monotonic() - released
    assert answer.status_code == 200, answer.text
    assert web.post("/api/v1/pools/resolve", json={"model": "auto/subscription"}).status_code == 200
    failure = web.post("/api/v1/connections/plan/failures", json=exhaustion_report())
    assert failure.json()["classification"] == "quota_exhausted"
    assert web.get("/readyz").status_code == 200
    after = state_of(database)
    assert after["usage"] == 10
    assert after["spend"] == sum(map(Decimal, COSTS))
    assert after["failures"] == 1
    print(
        f"FIGURES sqlite_locked locked_out_503_s={locked_out_503_s:.3f} write_503_s={write_503_s:.3f} "
        f"retry_after_s={retry_after_s:g} recover_s={recover_s:.3f}"
    )
