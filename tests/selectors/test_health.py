"""What readiness reads (ladder.selectors.health): one query each."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ladder import models as m
from ladder.selectors.health import beat_last_at, database_ping

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


def test_it_reads_no_beat_before_the_first_tick(django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(1):
        assert beat_last_at() is None


def test_it_reads_the_last_beat_tick() -> None:
    m.Heartbeat.objects.create(name="beat", last_at=NOW)
    m.Heartbeat.objects.create(name="other", last_at=NOW.replace(hour=13))

    assert beat_last_at() == NOW


def test_it_pings_the_database_in_one_query(django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(1):
        database_ping()
