from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, connections

from ladder import models as m
from tests.gateway.conftest import NOW, Clock, assert_schema

pytestmark = pytest.mark.django_db

PATH = "/readyz"


def ready(client: Any, status: int = 200) -> dict[str, Any]:
    response = client.get(PATH)
    assert response.status_code == status, response.content
    return assert_schema(response, PATH, "get")


def test_it_is_ready_with_the_database_redis_and_a_recent_beat(client: Any, clock: Clock) -> None:
    m.Heartbeat.objects.create(name="beat", last_at=NOW - timedelta(seconds=30))

    assert ready(client) == {"status": "ok", "database": "ok", "redis": "ok", "beat": "ok"}


def test_it_says_when_beat_never_ticked(client: Any, clock: Clock) -> None:
    body = ready(client)

    assert body["status"] == "degraded"
    assert body["beat"].startswith("never")


def test_it_says_when_the_last_beat_tick_is_stale(client: Any, clock: Clock) -> None:
    m.Heartbeat.objects.create(name="beat", last_at=NOW - timedelta(minutes=10))

    body = ready(client)

    assert body["status"] == "degraded"
    assert body["beat"] == "stale: last tick at 2026-09-15T11:50:00Z, 600s ago (> 60s)"


def test_it_takes_the_beat_age_limit_from_settings(client: Any, clock: Clock, settings: Any) -> None:
    settings.LADDER_BEAT_MAX_AGE_S = 900
    m.Heartbeat.objects.create(name="beat", last_at=NOW - timedelta(minutes=10))

    assert ready(client)["beat"] == "ok"


def test_it_stays_up_when_redis_is_down(client: Any, clock: Clock, settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    m.Heartbeat.objects.create(name="beat", last_at=NOW)

    body = ready(client)

    assert body["status"] == "degraded"
    assert body["database"] == "ok"
    assert body["redis"].startswith("down: ConnectionError")
    assert body["beat"] == "ok"


def test_it_answers_503_when_the_database_is_down(
    client: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connections["default"], "cursor", refuse)

    body = ready(client, 503)

    assert body["status"] == "unavailable"
    assert body["database"] == "down: OperationalError: connection refused"
    assert body["beat"].startswith("unknown")
