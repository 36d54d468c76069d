"""Upstream faults through the real refresh pipeline: beat's fan-out on a real Celery worker polls one
batch in which the fake upstream times out, answers 500, cuts its JSON in half, sends a 10 MB body
and drops the connection, beside one healthy upstream.

Each fault is classified (transient with backoff, or an unverifiable reading — never a guessed
one), stored as what it is, and nothing escapes: the worker lives on and the healthy connection of
the same batch gets its reading. (The adapters' handling of each fault is tested in
``tests/providers``; this is the pipeline around them.)
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.reliability.conftest import Stack
from tests.reliability.processes import Database, seed, wait_until

pytestmark = pytest.mark.slow

KIND = "zai-glm"
TIMEOUT_DELAY_MS = 11_000  # past the adapters' 10 s read timeout

# connection → how to break its upstream (None: healthy)
FAULTS: dict[str, Any] = {
    "healthy": None,
    "times-out": lambda c, cid: c.slow(TIMEOUT_DELAY_MS, kind=KIND, connection=cid),
    "answers-500": lambda c, cid: c.error(KIND, "http_500", connection=cid),
    "malformed": lambda c, cid: c.fault(KIND, "malformed", connection=cid),
    "ten-mb": lambda c, cid: c.fault(KIND, "oversized", size_mb=10, connection=cid),
    "resets": lambda c, cid: c.fault(KIND, "reset_connection", connection=cid),
}


def outcome(database: Database, cid: str) -> dict[str, Any]:
    ((error, level, next_at, polled_at),) = database.query(
        "SELECT last_poll_error, poll_backoff_level, next_refresh_at, last_polled_at"
        " FROM ladder_connection WHERE id = %s",
        (cid,),
    )
    readings = database.query(
        "SELECT r.verifiable, COUNT(w.id) FROM ladder_quotareading r"
        " LEFT JOIN ladder_quotawindow w ON w.reading_id = r.id"
        " WHERE r.connection_id = %s GROUP BY r.id, r.verifiable",
        (cid,),
    )
    failures = database.query(
        "SELECT status, classification FROM ladder_failureevent WHERE connection_id = %s AND source = 'poll'",
        (cid,),
    )
    return {
        "error": error,
        "level": level,
        "next_refresh_at": next_at,
        "polled": polled_at is not None,
        "readings": [(bool(verifiable), windows) for verifiable, windows in readings],
        "failures": failures,
    }


def test_it_classifies_each_upstream_fault_and_keeps_the_batch_going(stack: Stack) -> None:
    database, processes, upstream, control = stack.database, stack.processes, stack.upstream, stack.control
    env = {**stack.env, "LADDER_REFRESH_BEAT_S": "1"}
    seed(
        env,
        {
            "connections": [
                {
                    "id": cid,
                    "provider": "zai",
                    "auth_type": "apikey",
                    "base_url": upstream.url_for(KIND, cid),
                    "credential": f"token-{cid}",
                }
                for cid in FAULTS
            ]
        },
    )
    for cid, breaks in FAULTS.items():
        if breaks is not None:
            breaks(control, cid)
    started = time.monotonic()
    worker = processes.worker(env, concurrency=1)
    processes.beat(env)

    wait_until(
        lambda: all(outcome(database, cid)["polled"] for cid in FAULTS),
        timeout_s=60,
        interval_s=0.5,
        what="every connection of the batch polled once",
    )
    batch_s = time.monotonic() - started
    found = {cid: outcome(database, cid) for cid in FAULTS}
    summary = {cid: (o["error"][:80], o["level"], o["readings"], o["failures"]) for cid, o in found.items()}

    healthy = found["healthy"]
    assert (healthy["error"], healthy["level"], healthy["failures"]) == ("", 0, []), summary
    assert healthy["readings"], summary
    assert all(verifiable and windows for verifiable, windows in healthy["readings"]), summary
    # Transient faults: no reading at all, a poll failure stored, the poll backed off.
    for cid, words in (("times-out", "timeout"), ("answers-500", "HTTP 500"), ("resets", "transport error")):
        result = found[cid]
        assert result["error"].startswith("transient:"), summary
        assert words in result["error"], summary
        assert result["readings"] == [], summary
        assert result["level"] >= 1, summary
        assert result["next_refresh_at"] is not None, summary
        assert result["failures"], summary
        assert all(classification == "upstream_error" for _, classification in result["failures"]), summary
    assert {status for status, _ in found["answers-500"]["failures"]} == {500}
    assert {status for status, _ in found["times-out"]["failures"]} == {0}  # no HTTP answer
    # Unreadable answers: stored as unverifiable readings without windows, never a guessed figure.
    for cid, words in (("malformed", "malformed JSON"), ("ten-mb", "exceeds 1048576 bytes")):
        result = found[cid]
        assert result["error"].startswith("unverifiable:"), summary
        assert words in result["error"], summary
        assert result["readings"], summary
        assert all(reading == (False, 0) for reading in result["readings"]), summary
    processes.check_alive()  # nothing escaped: the worker lives on
    log = worker.log_text(tail=1 << 20)
    assert "refresh fan-out:" in log
    assert "Traceback" not in log, log[-3000:]
    print(
        f"FIGURES upstream_faults batch_polled_s={batch_s:.2f} "
        + " ".join(f"{cid}={o['error'].split(':')[0] or 'ok'}/level{o['level']}" for cid, o in found.items())
    )
