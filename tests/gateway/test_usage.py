from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ladder import models as m
from ladder.domain.timefmt import format_utc
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection, set_config

pytestmark = pytest.mark.django_db

PATH = "/api/v1/usage"
RESOLVE = "/api/v1/pools/resolve"


def event(request_id: str = "r1", **fields: Any) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "connection_id": "key",
        "model": "gpt-5-mini",
        "input_tokens": 1_000_000,
        "output_tokens": 500_000,
        "occurred_at": format_utc(NOW),
        **fields,
    }


def report(gateway: Api, body: Any) -> dict[str, Any]:
    response = gateway.post(PATH, body)
    assert response.status_code == 200, response.content
    return assert_schema(response, PATH, "post")


@pytest.fixture
def key() -> m.Connection:
    return make_connection("key", "openai", "apikey")


def test_it_prices_an_event_from_the_model_catalog(gateway: Api, clock: Clock, key: m.Connection) -> None:
    body = report(gateway, event())

    # gpt-5-mini: $0.25 in, $2 out per million tokens
    assert body["events"] == [
        {
            "request_id": "r1",
            "connection_id": "key",
            "model": "gpt-5-mini",
            "rung": "cheap",
            "rung_index": 3,
            "budget_rung": "cheap",
            "cost_usd": 1.25,
            "budget_cost_usd": 1.25,
            "occurred_at": "2026-09-15T12:00:00Z",
        }
    ]
    assert body["budgets"]["cheap"]["spent_usd"] == 1.25
    assert m.UsageEvent.objects.get().cost_usd == Decimal("1.25")


def test_it_takes_the_gateways_cost_when_given(gateway: Api, clock: Clock, key: m.Connection) -> None:
    body = report(gateway, event(cost_usd=0.5, model="gpt-5"))

    assert body["events"][0]["cost_usd"] == 0.5
    assert body["events"][0]["budget_rung"] == "premium"
    assert body["budgets"]["premium"]["spent_usd"] == 0.5


def test_it_accepts_a_model_outside_the_catalog_with_a_cost(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    body = report(gateway, event(model="gpt-9-preview", cost_usd=2))

    assert body["events"][0]["rung"] == "premium"  # not in the catalog: premium (L2)
    assert body["events"][0]["cost_usd"] == 2.0


def test_it_refuses_a_model_outside_the_catalog_without_a_cost(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    error = assert_error(gateway.post(PATH, event(model="gpt-9-preview")), PATH, "post", 422, "unknown_model")

    assert error["field"] == "model"
    assert not m.UsageEvent.objects.exists()


def test_it_refuses_an_unknown_connection(gateway: Api, clock: Clock, key: m.Connection) -> None:
    error = assert_error(
        gateway.post(PATH, event(connection_id="ghost")), PATH, "post", 422, "unknown_connection"
    )

    assert error["field"] == "connection_id"


def test_it_records_plan_usage_at_no_budget_cost(gateway: Api, clock: Clock) -> None:
    make_connection("plan", "claude", "oauth")
    set_config(rung_budget_usd={"cheap": 1.0, "premium": 1.0})

    body = report(gateway, event(connection_id="plan", model="claude-sonnet-4-5"))

    recorded = body["events"][0]
    assert recorded["rung"] == "subscription"
    assert recorded["budget_rung"] is None
    assert recorded["budget_cost_usd"] == 0.0
    assert recorded["cost_usd"] == 10.5  # what it would have cost: 3 + 7.5
    assert body["budgets"]["premium"]["spent_usd"] == 0.0


def test_it_records_keyless_and_free_usage_at_no_budget_cost(gateway: Api, clock: Clock) -> None:
    make_connection("anon", "openrouter", None, keyless=True)
    make_connection("router", "openrouter", "apikey")

    body = report(
        gateway,
        {
            "events": [
                event("a", connection_id="anon", model="openai/gpt-5-mini"),
                event("b", connection_id="router", model="deepseek/deepseek-chat-v3.1:free"),
            ]
        },
    )

    assert [(e["rung"], e["budget_rung"], e["budget_cost_usd"]) for e in body["events"]] == [
        ("keyless", None, 0.0),
        ("free", None, 0.0),
    ]


def test_it_records_a_batch_and_answers_in_order(gateway: Api, clock: Clock, key: m.Connection) -> None:
    body = report(gateway, {"events": [event("r1"), event("r2", cost_usd=0.75), event("r3", model="gpt-5")]})

    assert [e["request_id"] for e in body["events"]] == ["r1", "r2", "r3"]
    assert body["budgets"]["cheap"]["spent_usd"] == 2.0
    assert body["budgets"]["premium"]["spent_usd"] == 6.25  # gpt-5: 1M × $1.25 + 0.5M × $10
    assert m.UsageEvent.objects.count() == 3


def test_it_replays_a_request_id_as_a_no_op_with_the_same_answer(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    first = gateway.post(PATH, event())
    version = m.StateVersion.objects.get().value

    again = gateway.post(PATH, event())

    assert again.status_code == first.status_code == 200
    assert json.loads(again.content) == json.loads(first.content)
    assert m.UsageEvent.objects.count() == 1
    assert m.StateVersion.objects.get().value == version  # nothing written


def test_it_replays_an_event_sent_without_occurred_at(gateway: Api, clock: Clock, key: m.Connection) -> None:
    body = {k: v for k, v in event().items() if k != "occurred_at"}
    first = report(gateway, body)
    clock.advance(seconds=30)

    assert report(gateway, body) == first
    assert m.UsageEvent.objects.count() == 1


def test_it_refuses_the_same_request_id_with_another_payload(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    report(gateway, event())

    error = assert_error(gateway.post(PATH, event(input_tokens=7)), PATH, "post", 409, "request_id_conflict")

    assert error["field"] == "request_id"
    assert m.UsageEvent.objects.get().input_tokens == 1_000_000


def test_it_writes_nothing_of_a_batch_with_one_bad_event(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    response = gateway.post(PATH, {"events": [event("r1"), event("r2", connection_id="ghost")]})

    error = assert_error(response, PATH, "post", 422, "unknown_connection")
    assert error["field"] == "events[1].connection_id"
    assert not m.UsageEvent.objects.exists()


def test_it_refuses_a_batch_repeating_an_id_with_another_payload(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    response = gateway.post(PATH, {"events": [event("r1"), event("r1", cost_usd=3)]})

    error = assert_error(response, PATH, "post", 409)
    assert error["field"] == "events[1].request_id"
    assert not m.UsageEvent.objects.exists()


def test_it_counts_a_request_id_repeated_identically_in_a_batch_once(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    body = report(gateway, {"events": [event("r1"), event("r1")]})

    assert len(body["events"]) == 2
    assert body["budgets"]["cheap"]["spent_usd"] == 1.25


def test_it_refuses_more_than_a_thousand_events(gateway: Api, key: m.Connection) -> None:
    response = gateway.post(PATH, {"events": [event(f"r{i}") for i in range(1001)]})

    error = assert_error(response, PATH, "post", 413, "too_many_events")
    assert error["field"] == "events"


def test_it_accepts_a_thousand_events(gateway: Api, clock: Clock, key: m.Connection) -> None:
    body = report(gateway, {"events": [event(f"r{i}", cost_usd=0.001) for i in range(1000)]})

    assert body["budgets"]["cheap"]["spent_usd"] == 1.0
    assert m.UsageEvent.objects.count() == 1000


def test_it_refuses_an_event_from_the_future(gateway: Api, clock: Clock, key: m.Connection) -> None:
    response = gateway.post(PATH, event(occurred_at=format_utc(NOW + timedelta(minutes=6))))

    error = assert_error(response, PATH, "post", 422, "future_event")
    assert error["field"] == "occurred_at"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"connection_id": "key", "model": "gpt-5"}, "request_id"),
        (event(request_id=""), "request_id"),
        (event(request_id="x" * 201), "request_id"),
        (event(input_tokens=-1), "input_tokens"),
        (event(input_tokens=1.5), "input_tokens"),
        (event(input_tokens=True), "input_tokens"),
        (event(input_tokens="12"), "input_tokens"),
        (event(output_tokens=10**30), "output_tokens"),
        (event(cost_usd=-0.01), "cost_usd"),
        (event(cost_usd="1.0"), "cost_usd"),
        (event(cost_usd=10**400), "cost_usd"),
        (event(cost_usd=1e300), "cost_usd"),
        (event(occurred_at="2026-09-15T12:00:00"), "occurred_at"),
        (event(occurred_at="yesterday"), "occurred_at"),
        (event(connection_id=7), "connection_id"),
        (event(surprise=1), "surprise"),
        ({"events": "all"}, "events"),
        ({"events": []}, "events"),
        ({"events": [event(), 3]}, "events[1]"),
        ({"events": [event()], "extra": 1}, "extra"),
        ([event()], None),
    ],
)
def test_it_names_the_field_of_a_malformed_event(
    gateway: Api, clock: Clock, key: m.Connection, body: Any, field: str | None
) -> None:
    error = assert_error(gateway.post(PATH, body), PATH, "post", 400)

    assert error["field"] == field
    assert not m.UsageEvent.objects.exists()


def test_it_needs_the_report_scope(client: Any, resolve_only_token: str, key: m.Connection) -> None:
    assert_error(Api(client, resolve_only_token).post(PATH, event()), PATH, "post", 403, "insufficient_scope")


def _thrifty_pool(gateway: Api) -> dict[str, Any]:
    candidates = [{"provider": "openai", "model": "gpt-5-mini", "allowed_connection_ids": ["key"]}]
    response = gateway.post(RESOLVE, {"model": "auto/thrifty", "candidates": candidates})
    return assert_schema(response, RESOLVE, "post")


def test_it_takes_a_rung_out_when_its_budget_is_spent_and_back_next_period(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    set_config(rung_budget_usd={"cheap": 2.0}, budget_period="day")
    assert [e["rung"] for e in _thrifty_pool(gateway)["pool"]] == ["cheap"]

    body = report(gateway, event("r1"))  # $1.25 of $2
    assert body["budgets"]["cheap"] == {
        "budget_usd": 2.0,
        "spent_usd": 1.25,
        "period_ends_at": "2026-09-16T00:00:00Z",
    }
    assert [e["rung"] for e in _thrifty_pool(gateway)["pool"]] == ["cheap"]

    body = report(gateway, event("r2"))  # $2.50 ≥ $2: spent
    assert body["budgets"]["cheap"]["spent_usd"] == 2.5
    spent = _thrifty_pool(gateway)
    assert spent["pool"] == []
    assert [x["reason"] for x in spent["excluded"]] == ["budget_exhausted"]
    assert spent["empty"]["retry_at"] == "2026-09-16T00:00:00Z"

    clock.now = NOW.replace(hour=0) + timedelta(days=1)  # the next budget period
    back = _thrifty_pool(gateway)
    assert [e["rung"] for e in back["pool"]] == ["cheap"]
    assert (
        report(gateway, event("r3", occurred_at=format_utc(clock.now)))["budgets"]["cheap"]["spent_usd"]
        == 1.25
    )


@pytest.mark.parametrize(
    "occurred_at",
    [
        "0001-01-01T00:00:00+14:00",
        "0001-01-01T00:00:00+00:00",
        "9999-12-31T23:59:59-14:00",
        "2150-01-01T00:00:00Z",
        "1999-12-31T23:59:59Z",
    ],
)
def test_it_refuses_an_occurred_at_outside_the_supported_range(
    gateway: Api, clock: Clock, key: m.Connection, occurred_at: str
) -> None:
    response = gateway.post(PATH, event(occurred_at=occurred_at))

    error = assert_error(response, PATH, "post", 422, code="time_out_of_range")
    assert error["field"] == "occurred_at"
    assert not m.UsageEvent.objects.exists()


def test_it_replays_the_first_answer_after_more_spend_was_reported(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    first = gateway.post(PATH, event("r1"))
    report(gateway, event("r2", cost_usd=3.5))

    again = gateway.post(PATH, event("r1"))

    assert again.status_code == first.status_code == 200
    assert json.loads(again.content) == json.loads(first.content)


def test_it_replays_an_identical_batch_with_the_same_body(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    batch = {"events": [event("r1"), event("r2", cost_usd=0.75)]}
    first = report(gateway, batch)
    report(gateway, event("r3", cost_usd=9.0))
    clock.advance(seconds=30)

    assert report(gateway, batch) == first


def _with_repeat(body: dict[str, Any], key: str, first: Any) -> str:
    """`body` as JSON text whose `key` is written twice: `first`, then the value `body` holds."""
    text = json.dumps(body)
    assert text.startswith("{")
    return "{" + f"{json.dumps(key)}: {json.dumps(first)}, " + text[1:]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (_with_repeat(event(cost_usd=0), "cost_usd", 1), "cost_usd"),
        (
            json.dumps({"events": [event("r1"), event("r2"), "EVENT"]}).replace(
                '"EVENT"', _with_repeat(event("r3", cost_usd=0), "cost_usd", 1)
            ),
            "events[2].cost_usd",
        ),
        (_with_repeat({"events": [event("r2")]}, "events", [event("r1")]), "events"),
        (
            json.dumps({"events": [event("r1", occurred_at="WHEN")]}).replace(
                '"WHEN"', '{"at": "2026-09-15T12:00:00Z", "at": "2026-09-15T11:00:00Z"}'
            ),
            "events[0].occurred_at.at",
        ),
    ],
    ids=["top-level", "list-item", "top-level-list", "nested-object"],
)
def test_it_refuses_a_duplicate_key_and_records_nothing(
    gateway: Api, clock: Clock, key: m.Connection, raw: str, field: str
) -> None:
    response = gateway.post(PATH, raw, raw=True)

    error = assert_error(response, PATH, "post", 400, "invalid_request")
    assert (error["field"], error["message"]) == (field, f"{field}: duplicate key")
    assert not m.UsageEvent.objects.exists()
    assert not m.RungSpend.objects.filter(spent_usd__gt=0).exists()


def test_it_records_a_batch_whose_strings_hold_colons_and_escapes(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    # Colons inside strings, one of them written as an escape, are no repeated key.
    raw = json.dumps({"events": [event("r:1"), event("r:2", model="gpt-5:mini", cost_usd=0.5)]})

    response = gateway.post(PATH, raw.replace('"r:2"', '"r\\u003a2"'), raw=True)

    assert response.status_code == 200, response.content
    assert sorted(m.UsageEvent.objects.values_list("request_id", flat=True)) == ["r:1", "r:2"]


# --- pricing from the cached snapshot ------------------------------------------------------------


def test_it_prices_a_report_from_the_cached_snapshot(gateway: Api, clock: Clock, key: m.Connection) -> None:
    report(gateway, event("warm"))  # the snapshot is cached from here on
    batch = {"events": [event(f"r{index}") for index in range(16)]}

    with CaptureQueriesContext(connection) as queries:
        body = report(gateway, batch)

    assert [e["cost_usd"] for e in body["events"]] == [1.25] * 16
    assert body["budgets"]["cheap"]["spent_usd"] == 21.25
    sql = [query["sql"] for query in queries]
    assert not [q for q in sql if any(t in q for t in ("_connection", "catalogentry", "ladderconfiguration"))]
    # The token; the state versions (the cached snapshot); the request_ids known; in the savepoint:
    # the insert, the day and month counters, the spend, the answer stored.
    assert len(sql) == 10, "\n".join(sql)


def test_it_prices_a_connection_created_without_a_version_bump(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    report(gateway, event("warm"))
    make_connection("late", "openai", "apikey", bump=False)  # e.g. by a script: the snapshot lacks it

    body = report(gateway, {"events": [event("r1", connection_id="late"), event("r2")]})

    assert [(e["connection_id"], e["rung"], e["cost_usd"]) for e in body["events"]] == [
        ("late", "cheap", 1.25),
        ("key", "cheap", 1.25),
    ]


def test_it_prices_a_disabled_connection(gateway: Api, clock: Clock, key: m.Connection) -> None:
    make_connection("off", "openai", "apikey", enabled=False, disabled_reason="auth_failed")
    report(gateway, event("warm"))

    body = report(gateway, event("r1", connection_id="off"))

    assert (body["events"][0]["rung"], body["events"][0]["cost_usd"]) == ("cheap", 1.25)


@pytest.mark.django_db(transaction=True)
def test_it_refuses_a_connection_deleted_without_a_version_bump(gateway: Api, clock: Clock) -> None:
    make_connection("gone", "openai", "apikey")
    report(gateway, event("warm", connection_id="gone", cost_usd=0))  # the snapshot holds "gone"
    m.UsageEvent.objects.all().delete()
    m.Connection.objects.filter(pk="gone").delete()  # by a script: the snapshot still holds it

    # (with a cost: a transactional test may find the seeded catalogs flushed by an earlier one)
    response = gateway.post(PATH, event("r1", connection_id="gone", cost_usd=0.5))

    assert_error(response, PATH, "post", 422, "unknown_connection")
    assert not m.UsageEvent.objects.exists()


def test_it_prices_at_the_catalog_price_an_operator_just_changed(
    gateway: Api, clock: Clock, key: m.Connection, admin_client: Client
) -> None:
    report(gateway, event("warm"))
    entry = m.ModelCatalogEntry.objects.get(provider="openai", model="gpt-5-mini")
    form = {
        "provider": "openai",
        "model": "gpt-5-mini",
        "input_usd_per_mtok": "1",
        "output_usd_per_mtok": "4",
        "categories": "[]",
        "position": str(entry.position),
    }

    changed = admin_client.post(reverse("admin:ladder_modelcatalogentry_change", args=[entry.pk]), form)
    assert changed.status_code == 302, changed.content[:2000]

    body = report(gateway, event("r1"))
    assert body["events"][0]["cost_usd"] == 3.0  # 1 M in at $1 + 0.5 M out at $4


def test_it_refuses_an_event_above_the_max_event_cost_just_configured(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    report(gateway, event("warm"))
    set_config(max_event_cost_usd=1.0)

    response = gateway.post(PATH, event("r1"))

    assert assert_error(response, PATH, "post", 422, "cost_too_large")["field"] == "cost_usd"
