from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.types import Reading, Window
from ladder.services.readings import reading_record
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection, set_config

pytestmark = pytest.mark.django_db

LIST = "/api/v1/connections"
ONE = "/api/v1/connections/{connection_id}"


@pytest.fixture
def rows() -> None:
    make_connection(
        "plan",
        windows=[
            {"name": "5h", "remaining_pct": 3.5, "reset_at": NOW + timedelta(hours=1), "latched": True},
            {"name": "7d-opus", "remaining_pct": 80.0, "scope_models": ["*opus*"]},
        ],
        cooldown_until=NOW + timedelta(minutes=2),
    )
    key = make_connection("key", "openai", "apikey", models=["gpt-5-mini", "gpt-legacy"])
    key.set_credential("sk-live-secret-value")
    key.save()
    make_connection("off", "qwen", "oauth", enabled=False, disabled_reason="auth_failed")
    set_config(rung_budget_usd={"cheap": 5.0, "premium": 0})
    m.UsageEvent.objects.create(
        request_id="u1", budget_rung="cheap", cost_usd=Decimal("1.25"), occurred_at=NOW
    )


def test_it_lists_every_connection_with_its_verdict_rungs_and_reading(
    gateway: Api, clock: Clock, rows: None
) -> None:
    body = assert_schema(gateway.get(LIST), LIST, "get")

    by_id = {c["id"]: c for c in body["connections"]}
    assert list(by_id) == ["key", "off", "plan"]
    plan = by_id["plan"]
    assert (plan["billing"], plan["overage"], plan["enabled"]) == ("subscription", "hard-stop", True)
    assert plan["cooldown_until"] == "2026-09-15T12:02:00Z"
    assert plan["rungs"] == {
        "claude-opus-4-1": "subscription",
        "claude-sonnet-4-5": "subscription",
        "claude-haiku-4-5": "subscription",
    }
    assert plan["reading"]["fetched_at"] == "2026-09-15T12:00:00Z"
    assert plan["reading"]["source"] == "poll"
    assert plan["reading"]["windows"][0] == {
        "name": "5h",
        "remaining_pct": 3.5,
        "reset_at": "2026-09-15T13:00:00Z",
        "scope_models": [],
        "latched": True,
        "exhausts_at": None,
    }
    assert by_id["key"]["billing"] == "metered"
    assert by_id["key"]["rungs"] == {"gpt-5-mini": "cheap", "gpt-legacy": "premium"}
    assert by_id["key"]["reading"] is None
    assert (by_id["off"]["billing"], by_id["off"]["enabled"], by_id["off"]["disabled_reason"]) == (
        "unknown",
        False,
        "auth_failed",
    )
    assert body["budgets"] == {
        "cheap": {"budget_usd": 5.0, "spent_usd": 1.25, "period_ends_at": "2026-10-01T00:00:00Z"},
        "premium": {"budget_usd": 0.0, "spent_usd": 0.0, "period_ends_at": "2026-10-01T00:00:00Z"},
    }


def test_it_shows_each_connections_reserve_and_effective_poll_interval(gateway: Api, clock: Clock) -> None:
    make_connection("reserved", windows=[{"name": "5h", "remaining_pct": 15.0}], reserve_pct=20)
    make_connection("slow", windows=[{"name": "5h", "remaining_pct": 60.0}], min_poll_interval_s=300)
    make_connection("fast-floor", windows=[{"name": "5h", "remaining_pct": 60.0}], min_poll_interval_s=30)

    body = assert_schema(gateway.get(LIST), LIST, "get")

    shown = {c["id"]: (c["reserve_pct"], c["poll_interval_s"]) for c in body["connections"]}
    # A minimum below refresh_interval_s (60) changes nothing: the connection is polled every interval.
    assert shown == {"reserved": (20.0, None), "slow": (None, 300.0), "fast-floor": (None, None)}


def test_it_holds_a_reserved_plan_back_from_auto_subscription(gateway: Api, clock: Clock) -> None:
    make_connection(
        "reserved",
        windows=[{"name": "5h", "remaining_pct": 15.0, "reset_at": NOW + timedelta(hours=3)}],
        reserve_pct=20,
    )

    body = json.loads(gateway.post("/api/v1/pools/resolve", {"model": "auto/subscription"}).content)

    assert body["pool"] == []
    assert {e["reason"] for e in body["excluded"]} == {"reserve_reached"}
    assert "reserve 20%" in body["excluded"][0]["detail"]
    assert body["empty"]["retry_at"] == "2026-09-15T15:00:00Z"


def test_it_shows_each_windows_forecast(gateway: Api, clock: Clock) -> None:
    """5 %/10 min from 50 % to the 5 % cutoff: 90 min; a window that burns nothing: null."""
    make_connection("plan", bump=False)
    set_config(exit_cutoff_pct=5.0)
    for minutes, pct in ((-20, 60.0), (-10, 55.0), (0, 50.0)):
        reading = Reading(
            fetched_at=NOW + timedelta(minutes=minutes),
            windows=(Window("5h", pct, reset_at=NOW + timedelta(hours=4)), Window("7d", 90.0)),
        )
        reading_record(connection_id="plan", reading=reading, now=NOW)

    body = assert_schema(gateway.get(ONE.format(connection_id="plan")), ONE, "get")

    windows = {w["name"]: w["exhausts_at"] for w in body["connections"][0]["reading"]["windows"]}
    assert windows == {"5h": "2026-09-15T13:30:00Z", "7d": None}


def test_it_never_shows_a_credential(gateway: Api, clock: Clock, rows: None) -> None:
    for response in (gateway.get(LIST), gateway.get("/api/v1/connections/key")):
        text = response.content.decode()
        assert "sk-live-secret-value" not in text
        # API.md: only who owns it, its expiry and account (issue 17), never the value.
        shown = {c["id"]: c["credential"] for c in json.loads(text)["connections"]}
        assert shown["key"] == {"owner": "static", "expires_at": None, "account_id": None}
        assert m.Connection.objects.get(pk="key").credential_ciphertext not in text


def test_it_shows_one_connection_in_the_lists_shape(gateway: Api, clock: Clock, rows: None) -> None:
    listed = json.loads(gateway.get(LIST).content)

    body = assert_schema(gateway.get("/api/v1/connections/plan"), ONE, "get")

    assert body["connections"] == [c for c in listed["connections"] if c["id"] == "plan"]
    assert body["budgets"] == listed["budgets"]


def test_it_shows_a_connection_created_behind_the_caches_back(gateway: Api, clock: Clock, rows: None) -> None:
    gateway.get(LIST)
    m.Connection.objects.create(id="late", provider="claude", auth_type="oauth")  # no version bump

    body = assert_schema(gateway.get("/api/v1/connections/late"), ONE, "get")

    assert body["connections"][0]["id"] == "late"


def test_it_answers_404_for_an_unknown_connection(gateway: Api, clock: Clock, rows: None) -> None:
    assert_error(gateway.get("/api/v1/connections/ghost"), ONE, "get", 404, "connection_not_found")


def test_it_needs_the_resolve_scope(client: Any, report_only_token: str) -> None:
    api = Api(client, report_only_token)

    assert_error(api.get(LIST), LIST, "get", 403, "insufficient_scope")
    assert_error(api.get("/api/v1/connections/plan"), ONE, "get", 403, "insufficient_scope")


def test_it_refuses_a_post(gateway: Api) -> None:
    response = gateway.post(LIST, {})

    assert_error(response, LIST, "get", 405, "method_not_allowed")
    assert response["Allow"] == "GET"
