"""A real Celery worker killed (SIGKILL, its whole process group) while it sends an alert: the receiver
holds the request open, so the kill lands mid-delivery. The message is never acknowledged; the
delivery's owner key lapses with the task's hard time limit, the beat's sweep queues the delivery
again, and a new worker sends it: the receiver sees it twice at most, with the same delivery id."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.alert_receivers import HOLD, WebhookReceiver, verify_standard_webhook
from tests.reliability.processes import (
    Database,
    Processes,
    RedisServer,
    manage,
    process_env,
    run_database,
    wait_until,
)

pytestmark = pytest.mark.slow

SECRET = "a shared secret for the kill test"
TIME_LIMIT_S = 3  # the delivery's owner key lasts the task's hard time limit
CREATE = """
from django.utils import timezone
from ladder.models import AlertChannel
from ladder.services.alert_delivery import enqueue_test
channel = AlertChannel(name="hook", kind="webhook", url={url!r})
channel.set_secret({secret!r})
channel.full_clean()
channel.save()
print(enqueue_test(channel=channel, now=timezone.now()).delivery_id)
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[dict[str, str], Database]]:
    with RedisServer(tmp_path) as redis_server, run_database(tmp_path) as database:
        env = process_env(
            database.env,
            redis_url=redis_server.url(),
            LADDER_ALERT_SWEEP_S="1",
            LADDER_ALERT_TIME_LIMIT_S=str(TIME_LIMIT_S),
            LADDER_ALERT_SOFT_TIME_LIMIT_S=str(TIME_LIMIT_S - 1),
            LADDER_ALERT_HTTP_TIMEOUT_S="2",
        )
        manage(env, "migrate", "--noinput", "-v", "0")
        yield env, database


def test_it_sends_a_delivery_again_once_after_its_worker_is_killed_mid_send(
    stack: tuple[dict[str, str], Database], tmp_path: Path
) -> None:
    env, database = stack
    processes = Processes(tmp_path)
    with WebhookReceiver(script=[HOLD]) as receiver:
        try:
            delivery_id = manage(
                env, "shell", "-c", CREATE.format(url=receiver.url(), secret=SECRET)
            ).split()[-1]
            first = processes.worker(env, name="worker-a", concurrency=1)
            assert receiver.arrived.wait(30), processes.logs()
            first.kill()  # SIGKILL to the group: the pool child holding the request dies with it
            assert not first.alive
            receiver.release()
            status = database.scalar("SELECT status FROM ladder_alertdelivery")
            assert status == "pending"

            processes.worker(env, name="worker-b", concurrency=1)
            processes.beat(env)
            wait_until(
                lambda: database.scalar("SELECT status FROM ladder_alertdelivery") == "sent",
                timeout_s=30,
                what="the delivery sent by the second worker",
            )
            time.sleep(1.5)  # a few more sweeps: nothing is sent a third time
            processes.check_alive_except(first)
            assert "alert sweep: queued 1 lost deliveries again" in processes.logs(tail=1 << 20)
        finally:
            processes.stop()
        requests = list(receiver.requests)

    assert len(requests) == 2, [r.headers for r in requests]
    assert {r.headers["webhook-id"] for r in requests} == {delivery_id}
    assert {r.json()["delivery_id"] for r in requests} == {delivery_id}
    assert all(verify_standard_webhook(SECRET, r.headers, r.body) for r in requests)
    attempts = database.scalar("SELECT attempts FROM ladder_alertdelivery")
    assert attempts == 2
