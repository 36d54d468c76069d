"""A Celery worker killed (SIGKILL, pool child and all) while it polls: its claim lapses at the lease's
end (the task's hard time limit), another worker claims the connection again and exactly one
reading is stored for that refresh — the killed poll left nothing behind and nothing twice."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.reliability.conftest import Stack
from tests.reliability.processes import Database, seed, wait_until

pytestmark = pytest.mark.slow

LEASE_S = 6  # LADDER_REFRESH_TIME_LIMIT_S: a claim lasts the hard time limit
POLL_DELAY_MS = 2500  # the fake upstream answers this late: the kill lands mid-poll
KIND, VICTIM = "zai-glm", "victim"


def reading_count(database: Database) -> int:
    return int(
        database.scalar("SELECT COUNT(*) FROM ladder_quotareading WHERE connection_id = %s", (VICTIM,))
    )


def claimed_until(database: Database) -> datetime | None:
    value = database.scalar("SELECT claimed_until FROM ladder_connection WHERE id = %s", (VICTIM,))
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)  # SQLite stores text


def test_it_claims_a_killed_workers_connection_again_after_the_lease_and_stores_one_reading(
    stack: Stack,
) -> None:
    database, processes, upstream, control = stack.database, stack.processes, stack.upstream, stack.control
    env = {
        **stack.env,
        "LADDER_REFRESH_BEAT_S": "1",
        "LADDER_REFRESH_TIME_LIMIT_S": str(LEASE_S),
        "LADDER_REFRESH_SOFT_TIME_LIMIT_S": str(LEASE_S - 1),
    }
    seed(
        env,
        {
            "connections": [
                {
                    "id": VICTIM,
                    "provider": "zai",
                    "auth_type": "apikey",
                    "base_url": upstream.url_for(KIND, VICTIM),
                    "credential": "token-victim",
                }
            ]
        },
    )
    control.slow(POLL_DELAY_MS, kind=KIND, connection=VICTIM)
    first = processes.worker(env, name="worker-a", concurrency=1)
    processes.beat(env)

    wait_until(lambda: control.count(KIND, connection=VICTIM) >= 1, timeout_s=30, what="the first poll")
    lease_end = claimed_until(database)
    assert lease_end is not None  # claimed by worker A, its poll in flight
    first.kill()
    killed_at = time.monotonic()
    assert not first.alive
    assert reading_count(database) == 0

    processes.worker(env, name="worker-b", concurrency=1)
    wait_until(
        lambda: control.count(KIND, connection=VICTIM) >= 2, timeout_s=3 * LEASE_S, what="a second poll"
    )
    reclaimed_at = datetime.now(UTC)
    reclaim_s = time.monotonic() - killed_at
    # Never before the killed worker's lease ran out (polling only makes this moment look later).
    assert reclaimed_at >= lease_end - timedelta(seconds=0.05)
    wait_until(lambda: reading_count(database) >= 1, timeout_s=3 * LEASE_S, what="the reading")
    landed_s = time.monotonic() - killed_at
    time.sleep(2)  # a few more beat ticks: nothing is polled or stored again
    assert reading_count(database) == 1
    assert control.count(KIND, connection=VICTIM) == 2  # the killed poll and the one that landed
    assert claimed_until(database) is None
    row = database.query(
        "SELECT last_poll_error, poll_backoff_level FROM ladder_connection WHERE id = %s", (VICTIM,)
    )
    assert row == [("", 0)]
    processes.check_alive_except(first)
    print(
        f"FIGURES worker_killed lease_s={LEASE_S} kill_to_reclaim_s={reclaim_s:.2f} "
        f"kill_to_reading_s={landed_s:.2f} readings={reading_count(database)} "
        f"upstream_polls={control.count(KIND, connection=VICTIM)}"
    )
