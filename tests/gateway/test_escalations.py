from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.types import Reading, Window
from ladder.security.redis_breaker import redis_forget_outages
from ladder.services.readings import reading_record
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection, set_config

pytestmark = pytest.mark.django_db

PATH = "/api/v1/escalations"
RESOLVE = "/api/v1/pools/resolve"
CANDIDATES = [
    {"provider": "claude", "model": "claude-sonnet-4-5", "allowed_connection_ids": ["c1"]},
    {"provider": "openai", "model": "gpt-5-mini", "allowed_connection_ids": ["k1"]},
]
EXHAUSTED_WHY = "subscription: quota_exhausted on c1 (window 5h at 0.0% ≤ cutoff 2%)"


def resolve(gateway: Api, model: str = "auto/thrifty") -> dict[str, Any]:
    response = gateway.post(RESOLVE, {"model": model, "candidates": CANDIDATES})
    assert response.status_code == 200, response.content
    return assert_schema(response, RESOLVE, "post")


def plan_reading(clock: Clock, pct: float) -> None:
    window = Window("5h", pct, clock.now + timedelta(hours=2))
    reading_record(
        connection_id="c1", reading=Reading(fetched_at=clock.now, windows=(window,)), now=clock.now
    )


def escalations(gateway: Api, query: str = "") -> list[dict[str, Any]]:
    response = gateway.get(f"{PATH}{query}")
    assert response.status_code == 200, response.content
    return assert_schema(response, PATH, "get")["escalations"]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None, str]]:
    return [(e["auto_id"], e["from_rung"], e["to_rung"], e["kind"]) for e in events]


@pytest.fixture
def day(gateway: Api, clock: Clock) -> Api:
    """The plan climbs to the cheap rung, the pool turns empty, and the plan comes back."""
    make_connection(
        "c1", windows=[{"name": "5h", "remaining_pct": 60.0, "reset_at": NOW + timedelta(hours=2)}]
    )
    make_connection("k1", "openai", "apikey")
    assert resolve(gateway)["pool"][0]["rung"] == "subscription"
    clock.advance(minutes=10)
    plan_reading(clock, 0.0)
    assert resolve(gateway)["pool"][0]["rung"] == "cheap"
    assert resolve(gateway, "auto/subscription")["pool"] == []
    clock.advance(minutes=10)
    set_config(rung_budget_usd={"cheap": 0})
    assert resolve(gateway)["pool"] == []
    clock.advance(minutes=10)
    plan_reading(clock, 90.0)
    assert resolve(gateway)["pool"][0]["rung"] == "subscription"
    assert resolve(gateway, "auto/subscription")["pool"][0]["rung"] == "subscription"
    return gateway


def test_it_lists_each_change_of_the_first_rung_oldest_first(day: Api) -> None:
    events = escalations(day)

    assert summary(events) == [
        ("auto/thrifty", "subscription", "cheap", "up"),
        ("auto/thrifty", "cheap", None, "empty"),
        ("auto/thrifty", None, "subscription", "down"),
        ("auto/subscription", None, "subscription", "down"),
    ]
    assert [e["occurred_at"] for e in events] == [
        "2026-09-15T12:10:00Z",
        "2026-09-15T12:20:00Z",
        "2026-09-15T12:30:00Z",
        "2026-09-15T12:30:00Z",
    ]
    climb = events[0]
    assert (climb["from_rung_index"], climb["to_rung_index"]) == (0, 3)
    assert climb["why"] == EXHAUSTED_WHY
    assert events[1]["why"].startswith("auto/thrifty: every rung is exhausted")
    assert events[2]["why"] == "subscription serves again: claude/claude-sonnet-4-5 via c1"


def test_it_records_the_first_resolution_of_an_auto_id_as_nothing(gateway: Api, clock: Clock) -> None:
    make_connection(
        "c1", windows=[{"name": "5h", "remaining_pct": 0.0, "reset_at": NOW + timedelta(hours=2)}]
    )

    assert resolve(gateway, "auto/subscription")["pool"] == []

    assert escalations(gateway) == []


def test_it_filters_by_auto_id_time_and_limit(day: Api) -> None:
    assert summary(escalations(day, "?auto_id=auto/subscription")) == [
        ("auto/subscription", None, "subscription", "down")
    ]
    assert [e["kind"] for e in escalations(day, "?since=2026-09-15T12:20:00Z")] == ["empty", "down", "down"]
    assert [e["kind"] for e in escalations(day, "?since=2026-09-15T14:15:00%2B02:00")] == [
        "empty",
        "down",
        "down",
    ]
    assert [e["kind"] for e in escalations(day, "?auto_id=auto/thrifty&limit=2")] == ["up", "empty"]
    assert escalations(day, "?auto_id=auto/coding:thrifty") == []


@pytest.mark.parametrize(
    ("query", "field", "code"),
    [
        ("?auto_id=gpt-4o", "auto_id", "invalid_model"),
        ("?auto_id=auto/coding:warp", "auto_id", "invalid_model"),
        ("?since=yesterday", "since", "invalid_request"),
        ("?since=2026-09-15T12:00:00", "since", "invalid_request"),
        ("?since=2026-09-15T14:00:00+02:00", "since", "invalid_request"),
        ("?limit=0", "limit", "invalid_request"),
        ("?limit=1001", "limit", "invalid_request"),
        ("?limit=ten", "limit", "invalid_request"),
        ("?limit=-1", "limit", "invalid_request"),
        ("?limit=1&limit=2", "limit", "invalid_request"),
        ("?model=auto/thrifty", "model", "invalid_request"),
    ],
)
def test_it_refuses_bad_query_parameters_naming_them(gateway: Api, query: str, field: str, code: str) -> None:
    error = assert_error(gateway.get(f"{PATH}{query}"), PATH, "get", 400, code)

    assert error["field"] == field
    assert field in error["message"]


def test_it_needs_a_token_with_the_resolve_scope(gateway: Api, report_only_token: str) -> None:
    assert_error(gateway.get(PATH, token=None), PATH, "get", 401, "unauthenticated")
    assert_error(gateway.get(PATH, token=report_only_token), PATH, "get", 403, "insufficient_scope")
    assert_error(gateway.client.post(PATH, headers=gateway.headers(gateway.token)), PATH, "get", 405)


def test_it_caps_the_list_at_the_limit(gateway: Api) -> None:
    m.EscalationEvent.objects.bulk_create(
        m.EscalationEvent(
            auto_id="auto/thrifty",
            from_rung=index % 2 * 3,
            to_rung=3 - index % 2 * 3,
            kind="down" if index % 2 else "up",
            occurred_at=NOW + timedelta(seconds=index),
        )
        for index in range(1002)
    )

    assert len(escalations(gateway)) == 100
    listed = escalations(gateway, "?limit=1000")
    assert len(listed) == 1000
    assert listed[0]["occurred_at"] == "2026-09-15T12:00:00Z"
    assert listed[-1]["occurred_at"] == "2026-09-15T12:16:39Z"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_keeps_the_log_through_the_database_when_redis_is_down(
    gateway: Api, clock: Clock, settings: Any
) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    try:
        make_connection(
            "c1", windows=[{"name": "5h", "remaining_pct": 60.0, "reset_at": NOW + timedelta(hours=2)}]
        )
        make_connection("k1", "openai", "apikey")
        resolve(gateway)
        clock.advance(minutes=1)
        plan_reading(clock, 0.0)
        assert resolve(gateway)["pool"][0]["rung"] == "cheap"
    finally:
        redis_forget_outages()

    assert summary(escalations(gateway)) == [("auto/thrifty", "subscription", "cheap", "up")]
    assert escalations(gateway)[0]["why"] == EXHAUSTED_WHY
