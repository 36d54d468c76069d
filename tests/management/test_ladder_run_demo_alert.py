"""`make run` with LADDER_ALERT_WEBHOOK_URL (issue 20, "Done when"): the demo plan's alert reaches
that URL within 5 minutes of starting. The rules are evaluated every 5 s here instead of 60 s, to
keep the test short; with the default the alert came after 77 s."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.alert_receivers import WebhookReceiver
from tests.management.test_ladder_run import LiveCommand, command_env, free_port
from tests.reliability.processes import RedisServer

pytestmark = pytest.mark.slow

DEADLINE_S = 300.0


def test_it_delivers_the_demo_plan_s_alert_within_five_minutes(tmp_path: Path) -> None:
    web, upstream = free_port(), free_port()
    with RedisServer(tmp_path) as redis_server, WebhookReceiver() as receiver:
        env = command_env(
            tmp_path,
            upstream,
            REDIS_URL=redis_server.url(),
            CELERY_BROKER_URL=redis_server.url(),
            LADDER_ALERT_WEBHOOK_URL=receiver.url(),
            LADDER_ALERT_EVALUATE_S="5",
        )
        started = time.monotonic()
        with LiveCommand(["--port", str(web)], env) as run:
            run.expect(r"^alerts: channel 'default-webhook' .* created", timeout_s=60)
            fired = None
            while fired is None and time.monotonic() - started < DEADLINE_S:
                for request in list(receiver.requests):
                    body = request.json()
                    if body["event"] == "fired" and body["subject"].startswith("demo-claude-max/"):
                        fired = body
                        break
                time.sleep(1)
            assert fired is not None, (
                [r.json()["subject"] for r in receiver.requests],
                run.output[-3000:],
            )
        assert fired["rule"]["kind"] in ("window_forecast", "window_latched")
        assert fired["summary"].startswith("demo-claude-max: plan window ")
