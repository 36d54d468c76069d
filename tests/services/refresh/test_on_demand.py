"""Refreshes asked for by resolutions, queued once (ladder.services.refresh.on_demand)."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
import redis
from celery import current_app
from kombu.exceptions import OperationalError as BrokerOperationalError

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.security.redis_breaker import redis_forget_outages
from ladder.services import enqueue
from ladder.services.refresh.fanout import refresh_connections_run
from ladder.services.refresh.on_demand import refresh_is_pending, refresh_pending_key, refresh_request
from tests.services.refresh.rows import make_connection

pytestmark = pytest.mark.django_db


def test_it_queues_a_requested_refresh_once_on_commit(
    hot: redis.Redis, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[str]] = []

    def record(name: str, *, args: list[Any], **kwargs: Any) -> bool:
        assert name == "ladder.tasks.refresh_connections"
        sent.append(args[0])
        return True

    monkeypatch.setattr(enqueue, "task_send", record)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert refresh_request(connection_ids=["c1", "c2", "c1"]) == ["c1", "c2"]
        assert sent == []  # only once the transaction commits
        assert refresh_request(connection_ids=["c2", "c3"]) == ["c3"]

    assert len(callbacks) == 2
    assert sent == [["c1", "c2"], ["c3"]]
    assert 0 < (hot.ttl(refresh_pending_key("c1")) or 0) <= 30


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_skips_a_requested_refresh_without_raising_when_redis_is_down(settings: Any) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    started = time.monotonic()

    assert refresh_request(connection_ids=["c1"]) == []
    assert refresh_request(connection_ids=["c1"]) == []

    assert time.monotonic() - started < 1.5
    redis_forget_outages()


def test_it_forgets_the_request_when_the_broker_refuses_it(
    hot: redis.Redis, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise BrokerOperationalError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)

    with django_capture_on_commit_callbacks(execute=True):
        assert refresh_request(connection_ids=["c1"]) == ["c1"]

    assert hot.get(refresh_pending_key("c1")) is None
    assert refresh_request(connection_ids=["c1"]) == ["c1"]


def test_it_tells_a_requested_refresh_pending_until_the_run_ends(
    hot: redis.Redis, upstream: FakeUpstream, control: FakeUpstreamControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_connection(upstream, "c1")
    monkeypatch.setattr(enqueue, "task_send", lambda name, **kwargs: True)
    assert not refresh_is_pending(connection_id="c1")

    assert refresh_request(connection_ids=["c1"]) == ["c1"]
    assert refresh_is_pending(connection_id="c1")
    assert not refresh_is_pending(connection_id="c2")

    refresh_connections_run(["c1"], lease_s=30.0)

    assert not refresh_is_pending(connection_id="c1")
    assert control.count("claude-oauth", connection="c1") == 1


def test_it_tells_no_refresh_pending_when_redis_is_down(settings: Any) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()

    assert not refresh_is_pending(connection_id="c1")

    redis_forget_outages()
