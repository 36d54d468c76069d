from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from ladder.domain.types import Empty, Exclusion, PoolEntry, Resolution, Rung
from ladder.models import EscalationEvent, EscalationState
from ladder.security.redis_breaker import redis_forget_outages
from ladder.selectors.escalations import escalation_counts
from ladder.selectors.hotstate import HotStateUnavailable, resolutions_key, resolutions_read
from ladder.services.escalations import (
    escalation_observe,
    escalations_purge,
    last_outcome_key,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
PLAN_EXHAUSTED = Exclusion(
    "claude", "claude-sonnet-4-5", "c1", Rung.SUBSCRIPTION, "quota_exhausted", "window 5h at 0.0% ≤ cutoff 2%"
)
FREE_COOLING = Exclusion(
    "groq", "llama", "g1", Rung.FREE, "cooling_down", "cooling down until 2026-09-15T12:30:00Z"
)
EMPTY = Empty("all_rungs_exhausted", "auto/thrifty: every rung is exhausted, disabled or cooling down", None)


def resolution(
    rung: Rung | None,
    *,
    model: str = "auto/thrifty",
    excluded: tuple[Exclusion, ...] = (),
    at: datetime = NOW,
) -> Resolution:
    pool = () if rung is None else (PoolEntry("acme", "m1", rung, None, ("k1", "k2")),)
    return Resolution(
        model=model,
        grouping="subscription" if model.endswith("subscription") else "thrifty",
        category=None,
        resolved_at=at,
        pool=pool,
        excluded=excluded,
        empty=EMPTY if rung is None else None,
        refresh=(),
    )


def observe(rung: Rung | None, *, minutes: int = 0, **extra: Any) -> EscalationEvent | None:
    at = NOW + timedelta(minutes=minutes)
    return escalation_observe(resolution=resolution(rung, at=at, **extra), now=at)


def logged() -> list[tuple[str, int | None, int | None, str]]:
    return [
        (e.auto_id, e.from_rung, e.to_rung, e.kind)
        for e in EscalationEvent.objects.order_by("occurred_at", "id")
    ]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_down(settings: Any, hot: redis.Redis) -> Iterator[None]:
    up_url = settings.LADDER_HOTSTATE_REDIS_URL
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    yield
    settings.LADDER_HOTSTATE_REDIS_URL = up_url
    redis_forget_outages()


def test_it_records_nothing_the_first_time_it_meets_an_auto_id(hot: redis.Redis) -> None:
    assert observe(Rung.CHEAP) is None

    assert logged() == []
    assert EscalationState.objects.get(pk="auto/thrifty").rung == 3
    assert hot.get(last_outcome_key("auto/thrifty")) == b"3"


def test_it_costs_no_query_while_the_rung_holds(hot: redis.Redis, django_assert_num_queries: Any) -> None:
    observe(Rung.SUBSCRIPTION)

    with django_assert_num_queries(0):
        for minute in range(1, 6):
            assert observe(Rung.SUBSCRIPTION, minutes=minute) is None
    assert logged() == []


def test_it_records_a_climb_with_the_reasons_of_the_rungs_passed(hot: redis.Redis) -> None:
    observe(Rung.SUBSCRIPTION)

    event = observe(Rung.CHEAP, minutes=5, excluded=(PLAN_EXHAUSTED, FREE_COOLING))

    assert event is not None
    assert (event.auto_id, event.from_rung, event.to_rung, event.kind) == ("auto/thrifty", 0, 3, "up")
    assert event.occurred_at == NOW + timedelta(minutes=5)
    assert event.why == (
        "subscription: quota_exhausted on c1 (window 5h at 0.0% ≤ cutoff 2%); "
        "free: cooling_down on g1 (cooling down until 2026-09-15T12:30:00Z)"
    )


def test_it_explains_a_climb_by_the_rungs_passed_since_the_last_one(hot: redis.Redis) -> None:
    observe(Rung.FREE)

    event = observe(Rung.CHEAP, minutes=1, excluded=(PLAN_EXHAUSTED, FREE_COOLING))

    assert event is not None
    assert event.why == "free: cooling_down on g1 (cooling down until 2026-09-15T12:30:00Z)"


def test_it_records_turning_empty_and_coming_back_down(hot: redis.Redis) -> None:
    observe(Rung.CHEAP)
    empty = observe(None, minutes=1)
    back = observe(Rung.SUBSCRIPTION, minutes=2)
    down = observe(Rung.CHEAP, minutes=3)
    lower = observe(Rung.FREE, minutes=4)

    assert logged() == [
        ("auto/thrifty", 3, None, "empty"),
        ("auto/thrifty", None, 0, "down"),
        ("auto/thrifty", 0, 3, "up"),
        ("auto/thrifty", 3, 2, "down"),
    ]
    assert [e.why if e else None for e in (empty, back, down, lower)] == [
        EMPTY.message,
        "subscription serves again: acme/m1 via k1, k2",
        "no candidate sits on a rung below cheap",
        "free serves again: acme/m1 via k1, k2",
    ]


def test_it_keeps_each_auto_id_apart(hot: redis.Redis) -> None:
    observe(Rung.SUBSCRIPTION)
    observe(Rung.SUBSCRIPTION, model="auto/subscription")
    observe(None, minutes=1, model="auto/subscription")

    assert logged() == [("auto/subscription", 0, None, "empty")]


def test_it_counts_resolutions_by_grouping_and_outcome(hot: redis.Redis) -> None:
    for _ in range(3):
        observe(Rung.SUBSCRIPTION)
    observe(Rung.CHEAP)
    observe(None, model="auto/subscription")
    observe(None, model="auto/coding:subscription")

    assert resolutions_read() == {
        ("thrifty", "subscription"): 3,
        ("thrifty", "cheap"): 1,
        ("subscription", "empty"): 2,
    }
    assert hot.hlen(resolutions_key()) == 3


def test_it_falls_back_to_the_database_when_redis_is_down(redis_down: None) -> None:
    assert observe(Rung.SUBSCRIPTION) is None
    assert observe(Rung.SUBSCRIPTION, minutes=1) is None
    climbed = observe(Rung.CHEAP, minutes=2, excluded=(PLAN_EXHAUSTED,))
    assert observe(Rung.CHEAP, minutes=3) is None

    assert climbed is not None
    assert logged() == [("auto/thrifty", 0, 3, "up")]
    assert climbed.why.startswith("subscription: quota_exhausted on c1")
    with pytest.raises(HotStateUnavailable):
        resolutions_read()


def test_it_neither_loses_nor_repeats_a_change_across_a_redis_outage(hot: redis.Redis, settings: Any) -> None:
    up_url = settings.LADDER_HOTSTATE_REDIS_URL
    observe(Rung.SUBSCRIPTION)  # Redis and the database: subscription

    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    observe(Rung.CHEAP, minutes=1)  # logged by the database alone; Redis still says subscription

    settings.LADDER_HOTSTATE_REDIS_URL = up_url
    redis_forget_outages()
    assert observe(Rung.CHEAP, minutes=2) is None  # Redis: a change; the database: already logged
    observe(Rung.SUBSCRIPTION, minutes=3)

    assert logged() == [("auto/thrifty", 0, 3, "up"), ("auto/thrifty", 3, 0, "down")]


def test_it_asks_the_database_again_once_the_redis_key_expires(hot: redis.Redis) -> None:
    observe(Rung.SUBSCRIPTION)
    EscalationState.objects.filter(pk="auto/thrifty").update(rung=3)  # a change Redis missed
    hot.delete(last_outcome_key("auto/thrifty"))  # what the key's expiry does

    event = observe(Rung.SUBSCRIPTION, minutes=1)

    assert event is not None
    assert (event.from_rung, event.to_rung, event.kind) == (3, 0, "down")


def test_it_expires_its_redis_key_after_the_recheck_interval(hot: redis.Redis, settings: Any) -> None:
    settings.LADDER_ESCALATION_RECHECK_S = 30
    observe(Rung.SUBSCRIPTION)

    assert 0 < hot.ttl(last_outcome_key("auto/thrifty")) <= 30


def test_it_purges_the_events_that_occurred_before_the_cutoff(hot: redis.Redis) -> None:
    for days in (100, 91, 89, 0):
        EscalationEvent.objects.create(
            auto_id="auto/thrifty", from_rung=0, to_rung=3, kind="up", occurred_at=NOW - timedelta(days=days)
        )
    observe(Rung.CHEAP)
    observe(Rung.SUBSCRIPTION, minutes=1)

    counted = escalation_counts()

    assert escalations_purge(older_than=NOW - timedelta(days=90), chunk_size=1) == 2

    assert sorted((NOW - e.occurred_at).days for e in EscalationEvent.objects.all()) == [-1, 0, 89]
    # ladder_escalations_total counts what was purged too: it never goes down
    assert escalation_counts() == counted == {("auto/thrifty", "up"): 4, ("auto/thrifty", "down"): 1}
    assert escalations_purge(older_than=NOW - timedelta(days=90)) == 0
    assert escalation_counts() == counted
    # The last outcome stays: the next change is still logged against it
    observe(Rung.CHEAP, minutes=2)
    assert logged()[-1] == ("auto/thrifty", 0, 3, "up")
