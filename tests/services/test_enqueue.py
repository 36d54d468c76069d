"""Work sent to Celery by task name (ladder.services.enqueue): to the broker, or run at once under
CELERY_TASK_ALWAYS_EAGER; "SET NX, then send on commit" sends each piece of work once."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from celery import current_app
from kombu.exceptions import OperationalError as BrokerOperationalError

from ladder import tasks
from ladder.security.redis_breaker import redis_forget_outages
from ladder.selectors.hotstate import redis_key_prefix
from ladder.services import enqueue
from ladder.services.enqueue import enqueue_once, task_send
from ladder.services.refresh.fanout import RefreshSummary

pytestmark = pytest.mark.django_db


@dataclass
class Sent:
    name: str
    args: list[Any]
    task_id: str | None
    countdown_s: float


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Sent]:
    """What enqueue_once hands to task_send (recorded, not sent)."""
    calls: list[Sent] = []

    def record(name: str, *, args: list[Any], task_id: str | None = None, countdown_s: float = 0.0) -> bool:
        calls.append(Sent(name, args, task_id, countdown_s))
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    return calls


def test_it_hands_the_broker_the_task_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(current_app, "send_task", lambda name, **options: calls.append((name, options)))

    assert task_send("ladder.tasks.deliver_alert", args=[7], task_id="task-7", countdown_s=3.0)

    assert calls == [
        ("ladder.tasks.deliver_alert", {"args": [7], "task_id": "task-7", "countdown": 3.0, "retry": False})
    ]


def test_it_runs_the_registered_task_at_once_when_celery_is_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def run(connection_ids: list[str], **kwargs: Any) -> RefreshSummary:
        ran.append(list(connection_ids))
        return RefreshSummary()

    monkeypatch.setattr(tasks, "refresh_connections_run", run)
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)

    assert task_send("ladder.tasks.refresh_connections", args=[["c1", "c2"]])

    assert ran == [["c1", "c2"]]


def test_it_never_raises_when_the_broker_refuses(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise BrokerOperationalError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)

    assert not task_send("ladder.tasks.deliver_alert", args=[7])
    assert "ladder.tasks.deliver_alert(7,) not queued: broker down" in caplog.text


def test_it_sends_each_piece_of_work_once_when_the_transaction_commits(
    hot: redis.Redis, sent: list[Sent], django_capture_on_commit_callbacks: Any
) -> None:
    key = f"{redis_key_prefix()}:work"
    with django_capture_on_commit_callbacks(execute=True):
        assert enqueue_once("ladder.tasks.x", {f"{key}:1": 1, f"{key}:2": 2}, ttl_s=30, countdown_s=5) == [
            1,
            2,
        ]
        assert sent == []  # only once the transaction commits
        assert enqueue_once("ladder.tasks.x", {f"{key}:2": 2, f"{key}:3": 3}, ttl_s=30) == [3]

    assert [(s.args, s.countdown_s) for s in sent] == [([1], 5), ([2], 5), ([3], 0.0)]
    # Each key names the message that owns its work.
    assert [hot.get(f"{key}:{n}") for n in (1, 2, 3)] == [s.task_id.encode() for s in sent if s.task_id]
    assert 0 < (hot.pttl(f"{key}:1") or 0) <= 30_000


def test_it_sends_one_message_for_a_batch(
    hot: redis.Redis, sent: list[Sent], django_capture_on_commit_callbacks: Any
) -> None:
    key = f"{redis_key_prefix()}:work"
    hot.set(f"{key}:b", "another message")
    with django_capture_on_commit_callbacks(execute=True):
        queued = enqueue_once("ladder.tasks.x", {f"{key}:{n}": n for n in "abc"}, ttl_s=30, batch=True)

    assert queued == ["a", "c"]
    assert [s.args for s in sent] == [[["a", "c"]]]
    assert hot.get(f"{key}:a") == hot.get(f"{key}:c") == (sent[0].task_id or "").encode()


def test_it_lets_the_keys_go_when_the_broker_refuses(
    hot: redis.Redis, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    monkeypatch.setattr(enqueue, "task_send", lambda name, **kwargs: False)
    key = f"{redis_key_prefix()}:work:1"

    with django_capture_on_commit_callbacks(execute=True):
        assert enqueue_once("ladder.tasks.x", {key: 1}, ttl_s=30) == [1]

    assert hot.get(key) is None  # the next caller may send it


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("send_without_redis", "expected"), [(True, [1, 2]), (False, [])])
def test_without_redis_it_sends_everything_or_nothing(
    settings: Any,
    sent: list[Sent],
    django_capture_on_commit_callbacks: Any,
    send_without_redis: bool,
    expected: list[int],
) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    with django_capture_on_commit_callbacks(execute=True):
        queued = enqueue_once(
            "ladder.tasks.x", {"k1": 1, "k2": 2}, ttl_s=30, send_without_redis=send_without_redis
        )

    assert queued == expected
    assert [s.args[0] for s in sent] == expected
    redis_forget_outages()
