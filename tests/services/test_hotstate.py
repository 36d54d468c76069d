from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from ladder.models import Heartbeat
from ladder.security.redis_breaker import redis_forget_outages
from ladder.services import hotstate

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_down(settings: Any) -> Iterator[None]:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    yield
    redis_forget_outages()


def test_it_records_the_beat_in_the_database() -> None:
    hotstate.beat_record(now=NOW)

    assert Heartbeat.objects.get(pk="beat").last_at == NOW


def test_it_records_the_beat_when_redis_is_down(redis_down: None) -> None:
    hotstate.beat_record(now=NOW)

    assert Heartbeat.objects.get(pk="beat").last_at == NOW
