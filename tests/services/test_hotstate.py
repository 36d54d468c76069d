from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from ladder.domain.types import Reading, Window
from ladder.models import Connection, Heartbeat
from ladder.services import hotstate
from ladder.services.readings import reading_record

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_down(settings: Any) -> Iterator[None]:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    hotstate.mark_up()
    yield
    hotstate.mark_up()


def sample(pct: float = 40.0, at: datetime = NOW) -> Reading:
    return Reading(
        fetched_at=at,
        windows=(
            Window("5h", pct, NOW + timedelta(hours=1), latched=pct <= 2),
            Window("7d-opus", 90.5, None, scope_models=("*opus*",)),
        ),
        source="headers",
        verifiable=True,
        observed_overage="meters-to-paid",
        note="a note",
    )


def test_it_round_trips_a_reading_through_json() -> None:
    reading = sample(1.5)

    assert hotstate.reading_from_json(hotstate.reading_to_json("c1", 7, reading)) == reading


def test_it_stores_and_reads_readings(hot: redis.Redis) -> None:
    assert hotstate.readings_set([("c1", 1, sample(10)), ("c2", 2, sample(20))])

    found = hotstate.readings_get(["c1", "c2", "c3"])

    assert found == {"c1": sample(10), "c2": sample(20)}
    assert 0 < (hot.ttl(hotstate.reading_key("c1")) or 0) <= 86400


def test_it_never_replaces_a_newer_reading_with_an_older_one(hot: redis.Redis) -> None:
    hotstate.readings_set([("c1", 5, sample(10, at=NOW))])
    hotstate.readings_set([("c1", 4, sample(99, at=NOW - timedelta(seconds=1)))])
    hotstate.readings_set([("c1", 3, sample(98, at=NOW))])  # same time, lower id: older
    assert hotstate.readings_get(["c1"])["c1"].windows[0].remaining_pct == 10

    hotstate.readings_set([("c1", 6, sample(30, at=NOW))])
    assert hotstate.readings_get(["c1"])["c1"].windows[0].remaining_pct == 30


def test_it_falls_back_to_the_database_fast_when_redis_is_down(redis_down: None) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    reading_record(connection_id="c1", reading=sample(40), now=NOW)

    started = time.monotonic()
    found = hotstate.readings_latest_hot()
    again = hotstate.readings_latest_hot()
    elapsed = time.monotonic() - started

    assert found["c1"].windows[0].remaining_pct == 40
    assert again == found
    assert elapsed < 1.5
    assert not hotstate.readings_set([("c1", 1, sample())])
    with pytest.raises(hotstate.HotStateUnavailable):
        hotstate.readings_get(["c1"])


def test_it_fills_what_redis_lacks_from_the_database_and_warms_it(hot: redis.Redis) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    Connection.objects.create(id="c2", provider="claude", auth_type="oauth")
    stored = reading_record(connection_id="c1", reading=sample(40), now=NOW)  # on_commit: not in Redis yet
    hotstate.readings_set([("c2", 999, sample(77))])

    found = hotstate.readings_latest_hot()

    assert found["c1"] == stored.reading
    assert found["c2"].windows[0].remaining_pct == 77
    assert hotstate.readings_get(["c1"]) == {"c1": stored.reading}


def test_it_syncs_and_forgets_a_connections_entry(hot: redis.Redis) -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    stored = reading_record(connection_id="c1", reading=sample(40), now=NOW)
    hotstate.readings_set([("c1", stored.id + 100, sample(99, at=NOW + timedelta(hours=1)))])  # wrong

    hotstate.reading_sync("c1")
    assert hotstate.readings_get(["c1"]) == {"c1": stored.reading}

    hotstate.reading_forget("c1")
    assert hotstate.readings_get(["c1"]) == {}


def test_it_records_the_beat_in_the_database_and_in_redis(hot: redis.Redis) -> None:
    hotstate.beat_record(now=NOW)

    assert Heartbeat.objects.get(pk="beat").last_at == NOW
    assert hot.get(hotstate.last_beat_key()) == b"2026-09-01T12:00:00.000000Z"
    assert hotstate.last_beat_get() == NOW


def test_it_reads_the_last_beat_from_the_database_when_redis_is_down(redis_down: None) -> None:
    assert hotstate.last_beat_get() is None

    hotstate.beat_record(now=NOW)

    assert hotstate.last_beat_get() == NOW
    assert not hotstate.available()
