from __future__ import annotations

import io
import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ladder import models as m
from ladder.domain.timefmt import format_utc
from ladder.domain.types import Reading, Window
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.readings import reading_record
from tests.gateway.conftest import (
    NOW,
    Api,
    Clock,
    RefreshRecorder,
    assert_error,
    assert_schema,
    make_connection,
    set_config,
)

pytestmark = pytest.mark.django_db

PATH = "/api/v1/pools/resolve"
SONNET = "claude-sonnet-4-5"


def resolve(gateway: Api, model: str, candidates: Any = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, **extra}
    if candidates is not None:
        body["candidates"] = candidates
    response = gateway.post(PATH, body)
    assert response.status_code == 200, response.content
    return assert_schema(response, PATH, "post")


def fresh_5h(pct: float = 60.0, **window: Any) -> list[dict[str, Any]]:
    return [{"name": "5h", "remaining_pct": pct, "reset_at": NOW + timedelta(hours=2), **window}]


def test_it_builds_the_pool_from_the_model_catalog(gateway: Api, clock: Clock) -> None:
    make_connection("c1", windows=fresh_5h())

    body = resolve(gateway, "auto/coding:subscription")

    assert body["model"] == "auto/coding:subscription"
    assert body["category"] == "coding"
    assert body["resolved_at"] == "2026-09-15T12:00:00Z"
    assert [(e["model"], e["rung"], e["allowed_connection_ids"]) for e in body["pool"]] == [
        ("claude-opus-4-1", "subscription", ["c1"]),
        (SONNET, "subscription", ["c1"]),
        ("claude-haiku-4-5", "subscription", ["c1"]),
    ]
    assert body["empty"] is None


def test_it_treats_absent_and_null_candidates_alike(gateway: Api, clock: Clock) -> None:
    make_connection("c1", windows=fresh_5h())

    assert resolve(gateway, "auto/thrifty") == resolve(gateway, "auto/thrifty", candidates=None, **{})
    response = gateway.post(PATH, {"model": "auto/thrifty", "candidates": None})
    assert json.loads(response.content) == resolve(gateway, "auto/thrifty")


def test_it_keeps_the_gateways_candidate_order_and_excludes_unknown_connections(
    gateway: Api, clock: Clock
) -> None:
    make_connection("c1", windows=fresh_5h())
    make_connection("k1", "openai", "apikey")
    candidates = [
        {"provider": "openai", "model": "gpt-5-mini", "allowed_connection_ids": ["k1"]},
        {"provider": "claude", "model": SONNET, "allowed_connection_ids": ["ghost", "c1"]},
    ]

    body = resolve(gateway, "auto/thrifty", candidates)

    assert [(e["model"], e["rung"], e["allowed_connection_ids"]) for e in body["pool"]] == [
        (SONNET, "subscription", ["c1"]),
        ("gpt-5-mini", "cheap", ["k1"]),
    ]
    assert [(x["connection_id"], x["rung"], x["reason"]) for x in body["excluded"]] == [
        ("ghost", None, "unknown_connection")
    ]


def test_it_answers_an_empty_pool_with_a_200_and_the_reason(gateway: Api, clock: Clock) -> None:
    make_connection("c1", windows=fresh_5h(1.0))

    body = resolve(gateway, "auto/subscription")

    assert body["pool"] == []
    assert body["empty"]["code"] == "no_verified_subscription_quota"
    assert body["empty"]["retry_at"] == format_utc(NOW + timedelta(hours=2))
    assert {x["reason"] for x in body["excluded"]} == {"quota_exhausted"}


def test_it_answers_no_candidates_without_any_connection(gateway: Api, clock: Clock) -> None:
    body = resolve(gateway, "auto/vision:thrifty")

    assert body["pool"] == []
    assert body["empty"]["code"] == "no_candidates"


@pytest.mark.parametrize(
    ("model", "needle"),
    [
        ("auto/coding:warp", "unknown tier 'warp'"),
        ("auto/subscription:coding", "auto/subscription:coding"),
        ("gpt-4o", "not an auto id"),
        (42, "must be an auto id"),
        (None, "must be an auto id"),
    ],
)
def test_it_refuses_a_model_outside_the_auto_id_grammar(gateway: Api, model: Any, needle: str) -> None:
    response = gateway.post(PATH, {"model": model})

    error = assert_error(response, PATH, "post", 400, "invalid_model")
    assert error["field"] == "model"
    assert needle in error["message"]
    assert "accepted" in error["message"]


def test_it_requires_a_model(gateway: Api) -> None:
    error = assert_error(gateway.post(PATH, {"candidates": None}), PATH, "post", 400)

    assert error["field"] == "model"


@pytest.mark.parametrize(
    ("candidates", "field"),
    [
        ([{"model": SONNET}], "candidates[0].provider"),
        ([{"provider": "claude", "model": SONNET, "extra": 1}], "candidates[0].extra"),
        (
            [{"provider": "claude", "model": SONNET, "allowed_connection_ids": "c1"}],
            "candidates[0].allowed_connection_ids",
        ),
        (
            [{"provider": "claude", "model": SONNET, "allowed_connection_ids": [1]}],
            "candidates[0].allowed_connection_ids[0]",
        ),
        ({"provider": "claude"}, "candidates"),
        ("everything", "candidates"),
    ],
)
def test_it_names_the_field_of_a_bad_candidate(gateway: Api, candidates: Any, field: str) -> None:
    response = gateway.post(PATH, {"model": "auto/thrifty", "candidates": candidates})

    error = assert_error(response, PATH, "post", 400, "invalid_request")
    assert error["field"] == field
    assert error["message"].startswith(field)


def test_it_refuses_unknown_top_level_keys(gateway: Api) -> None:
    error = assert_error(gateway.post(PATH, {"model": "auto/thrifty", "modle": 1}), PATH, "post", 400)

    assert error["field"] == "modle"


def test_it_needs_the_resolve_scope(client: Any, report_only_token: str) -> None:
    response = Api(client, report_only_token).post(PATH, {"model": "auto/thrifty"})

    assert_error(response, PATH, "post", 403, "insufficient_scope")


def test_it_queues_the_connections_it_lists_under_refresh(
    gateway: Api, clock: Clock, refreshes: RefreshRecorder
) -> None:
    make_connection("fresh", windows=fresh_5h())
    make_connection("stale", windows=fresh_5h(), fetched_at=NOW - timedelta(minutes=10))
    make_connection("never")

    body = resolve(gateway, "auto/thrifty")

    assert body["refresh"] == ["never", "stale"]  # connection order: position, then id
    assert refreshes.calls == [["never", "stale"]]


def test_it_queues_nothing_when_every_reading_is_fresh(
    gateway: Api, clock: Clock, refreshes: RefreshRecorder
) -> None:
    make_connection("fresh", windows=fresh_5h())

    assert resolve(gateway, "auto/thrifty")["refresh"] == []
    assert refreshes.calls == []


def test_it_answers_even_when_queueing_a_refresh_fails(
    gateway: Api, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*, connection_ids: list[str]) -> list[str]:
        raise ConnectionError("broker down")

    monkeypatch.setattr("ladder.gateway.resolve.refresh_request", broken)
    make_connection("never")

    assert resolve(gateway, "auto/thrifty")["refresh"] == ["never"]


def test_it_recomputes_every_resolution_from_the_cached_snapshot(gateway: Api, clock: Clock) -> None:
    make_connection("c1", windows=fresh_5h(1.0))
    assert (
        resolve(
            gateway,
            "auto/thrifty",
            [{"provider": "claude", "model": SONNET, "allowed_connection_ids": ["c1"]}],
        )["pool"]
        == []
    )

    clock.advance(hours=2)  # the window resets: same snapshot, new answer
    body = resolve(
        gateway, "auto/thrifty", [{"provider": "claude", "model": SONNET, "allowed_connection_ids": ["c1"]}]
    )

    assert [e["allowed_connection_ids"] for e in body["pool"]] == [["c1"]]


def test_it_sees_a_new_reading_on_the_next_request(gateway: Api, clock: Clock) -> None:
    make_connection("c1", windows=fresh_5h(1.0))
    candidates = [{"provider": "claude", "model": SONNET, "allowed_connection_ids": ["c1"]}]
    assert resolve(gateway, "auto/subscription", candidates)["pool"] == []

    reading_record(
        connection_id="c1",
        reading=Reading(fetched_at=NOW, windows=(Window("5h", 90.0, NOW + timedelta(hours=2)),)),
        now=NOW,
    )

    assert resolve(gateway, "auto/subscription", candidates)["pool"][0]["allowed_connection_ids"] == ["c1"]


@pytest.mark.parametrize("connections", [5, 50])
def test_it_costs_a_constant_number_of_queries(
    gateway: Api, clock: Clock, connections: int, django_assert_max_num_queries: Any
) -> None:
    for index in range(connections):
        provider = ("claude", "openai", "codex")[index % 3]
        auth = "apikey" if provider == "openai" else "oauth"
        stale = index % 4 == 0
        make_connection(
            f"c{index:03d}",
            provider,
            auth,
            bump=False,
            windows=fresh_5h(50.0 - index % 50),
            fetched_at=NOW - timedelta(minutes=10) if stale else NOW,
        )
    m.UsageEvent.objects.create(
        request_id="u1", budget_rung="cheap", cost_usd=Decimal("1.5"), occurred_at=NOW
    )
    set_config(rung_budget_usd={"cheap": 5.0})
    # The escalation log reads and creates its row the first time it meets an auto id; every later
    # resolution of an unchanged rung costs it no query. Measure the latter, with a cold snapshot.
    resolve(gateway, "auto/thrifty")
    resolve(gateway, "auto/coding:subscription")
    snapshot_cache.clear()

    # token lookup, its last_used_at, the state version, the snapshot (7)
    with django_assert_max_num_queries(10):
        body = resolve(gateway, "auto/thrifty")
    assert len(body["pool"]) > 0

    with django_assert_max_num_queries(3):  # cached snapshot: token and state version only
        resolve(gateway, "auto/coding:subscription")


def _export_state(tmp_path: Path, model: str, candidates: Any = None) -> Path:
    out = io.StringIO()
    call_command("ladder_resolve", "--export", "--now", format_utc(NOW), stdout=out)
    state = json.loads(out.getvalue())
    state["request"] = {"model": model, "candidates": candidates}
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    return path


def _offline(path: Path) -> dict[str, Any]:
    out = io.StringIO()
    call_command("ladder_resolve", str(path), stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("model", "candidates"),
    [
        ("auto/subscription", None),
        ("auto/thrifty", None),
        ("auto/coding:thrifty", None),
        (
            "auto/thrifty",
            [
                {"provider": "openai", "model": "gpt-5", "allowed_connection_ids": ["metered", "ghost"]},
                {"provider": "claude", "model": SONNET, "connection_id": "plan-ok"},
                {"provider": "openai", "model": "gpt-5-mini", "allowed_connection_ids": ["metered"]},
                {
                    "provider": "claude",
                    "model": "claude-opus-4-1",
                    "allowed_connection_ids": ["plan-spent", "plan-ok"],
                },
            ],
        ),
    ],
)
def test_it_answers_the_offline_resolvers_document_for_the_same_state(
    gateway: Api, clock: Clock, tmp_path: Path, model: str, candidates: Any
) -> None:
    set_config(rung_budget_usd={"cheap": 1.0, "premium": 0}, budget_period="day")
    make_connection("plan-ok", windows=fresh_5h(70.0))
    make_connection(
        "plan-spent",
        windows=[*fresh_5h(40.0), {"name": "7d-opus", "remaining_pct": 0, "scope_models": ["*opus*"]}],
    )
    make_connection("plan-stale", "codex", "oauth", windows=fresh_5h(), fetched_at=NOW - timedelta(hours=1))
    make_connection("metered", "openai", "apikey")
    make_connection("cooling", "claude", "oauth", cooldown_until=NOW + timedelta(minutes=5))
    make_connection("off", "claude", "oauth", enabled=False, disabled_reason="auth_failed")
    make_connection("uncurated", "qwen", "oauth")
    m.UsageEvent.objects.create(
        request_id="u1", budget_rung="cheap", cost_usd=Decimal("1.25"), occurred_at=NOW
    )

    offline = _offline(_export_state(tmp_path, model, candidates))
    body = resolve(gateway, model, candidates)

    assert body == offline
    assert body["excluded"]  # the state exercises exclusions, not only a pool


def test_it_reads_an_observation_in_one_query_not_by_reloading_the_snapshot(
    gateway: Api, clock: Clock
) -> None:
    # A gateway reporting passive headers sends an observation per request: the next resolution
    # re-reads that connection's live state (one query) instead of the whole state (9 queries).
    make_connection("c1", windows=fresh_5h())
    make_connection("c2", windows=fresh_5h())
    resolve(gateway, "auto/subscription")  # the snapshot is cached from here on
    response = gateway.post(
        "/api/v1/connections/c1/observations",
        {"status": 200, "headers": {"anthropic-ratelimit-unified-5h-utilization": "0.99"}},
    )
    assert response.status_code == 200, response.content

    with CaptureQueriesContext(connection) as queries:
        body = resolve(gateway, "auto/subscription")

    assert [e["allowed_connection_ids"] for e in body["pool"]] == [["c2"]] * 3  # c1 is down to 1 %
    # The token, the two versions, the live state written since, the spend.
    assert len(queries) == 4, "\n".join(q["sql"] for q in queries)

    with CaptureQueriesContext(connection) as queries:
        resolve(gateway, "auto/subscription")
    assert len(queries) == 3  # nothing written since: the token, the versions, the spend
