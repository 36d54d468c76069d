"""What a token with limits may do (API.md, Authentication and errors): a list of connections, a
spend ceiling per budget period, a rate of reports; and the one event's cost ceiling (DESIGN §3)."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.timefmt import format_utc
from ladder.security.redis_breaker import redis_forget_outages
from ladder.services.tokens import gateway_token_create
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection, set_config

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/usage"
CONNECTIONS = "/api/v1/connections"
DETAIL = "/api/v1/connections/{connection_id}"
FAILURES = "/api/v1/connections/{connection_id}/failures"
OBSERVATIONS = "/api/v1/connections/{connection_id}/observations"
RESOLVE = "/api/v1/pools/resolve"


def event(request_id: str = "r1", connection_id: str = "mine", **fields: Any) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "connection_id": connection_id,
        "model": "gpt-5",
        "input_tokens": 1000,
        "output_tokens": 100,
        "occurred_at": format_utc(NOW),
        **fields,
    }


@pytest.fixture
def connections() -> None:
    make_connection("mine", "openai", "apikey")
    make_connection("theirs", "openai", "apikey")


@pytest.fixture
def limited(client: Any) -> Api:
    token, value = gateway_token_create(name="limited")
    token.connection_ids = ["mine"]
    token.save()
    return Api(client, value)


@pytest.fixture(autouse=True)
def _own_rate_limit_keys(settings: Any) -> Iterator[None]:
    settings.LADDER_RATELIMIT_PREFIX = f"ladder:test-ratelimit:{uuid.uuid4().hex[:12]}"
    redis_forget_outages()
    yield
    redis_forget_outages()


# --- connections a token may name --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (FAILURES, {"status": 401}),
        (OBSERVATIONS, {"status": 200, "headers": {}}),
    ],
)
def test_it_refuses_a_report_on_a_connection_the_token_may_not_name(
    limited: Api, clock: Clock, connections: None, path: str, body: dict[str, Any]
) -> None:
    error = assert_error(
        limited.post(path.format(connection_id="theirs"), body), path, "post", 403, "connection_not_allowed"
    )

    assert error["field"] == "connection_id"
    assert m.Connection.objects.get(pk="theirs").enabled  # the 401 disabled nothing
    assert not m.FailureEvent.objects.exists()


def test_it_takes_a_report_on_an_allowed_connection(limited: Api, clock: Clock, connections: None) -> None:
    response = limited.post(FAILURES.format(connection_id="mine"), {"status": 401})

    assert_schema(response, FAILURES, "post")
    assert response.status_code == 200
    assert not m.Connection.objects.get(pk="mine").enabled


def test_it_refuses_an_unknown_connection_as_not_allowed_rather_than_unknown(
    limited: Api, clock: Clock, connections: None
) -> None:
    path = FAILURES.format(connection_id="ghost")
    assert_error(limited.post(path, {"status": 401}), FAILURES, "post", 403, "connection_not_allowed")


def test_it_refuses_a_batch_naming_another_connection_and_records_none_of_it(
    limited: Api, clock: Clock, connections: None
) -> None:
    batch = {"events": [event("r1"), event("r2", connection_id="theirs")]}

    error = assert_error(limited.post(USAGE, batch), USAGE, "post", 403, "connection_not_allowed")

    assert error["field"] == "events[1].connection_id"
    assert not m.UsageEvent.objects.exists()


def test_it_lists_and_shows_only_the_allowed_connections(
    limited: Api, clock: Clock, connections: None
) -> None:
    listed = assert_schema(limited.get(CONNECTIONS), CONNECTIONS, "get")
    assert [c["id"] for c in listed["connections"]] == ["mine"]

    assert limited.get(DETAIL.format(connection_id="mine")).status_code == 200
    response = limited.get(DETAIL.format(connection_id="theirs"))
    assert_error(response, DETAIL, "get", 403, "connection_not_allowed")


def test_it_keeps_resolutions_unrestricted(limited: Api, clock: Clock, connections: None) -> None:
    candidates = [{"provider": "openai", "model": "gpt-5", "allowed_connection_ids": ["mine", "theirs"]}]

    response = limited.post(RESOLVE, {"model": "auto/thrifty", "candidates": candidates})

    assert response.status_code == 200
    assert response.json()["pool"][0]["allowed_connection_ids"] == ["mine", "theirs"]


def test_it_lets_an_unlimited_token_name_every_connection(
    gateway: Api, clock: Clock, connections: None
) -> None:
    listed = gateway.get(CONNECTIONS).json()
    assert [c["id"] for c in listed["connections"]] == ["mine", "theirs"]
    assert gateway.post(USAGE, event(connection_id="theirs", cost_usd=1)).status_code == 200


# --- one event's cost --------------------------------------------------------------------------


def test_it_refuses_an_event_costing_more_than_max_event_cost_usd(
    gateway: Api, clock: Clock, connections: None
) -> None:
    batch = {"events": [event("r1", cost_usd=1), event("r2", cost_usd=1e9)]}

    error = assert_error(gateway.post(USAGE, batch), USAGE, "post", 422)

    assert error["field"] == "events[1].cost_usd"
    assert "max_event_cost_usd" in error["message"]
    assert not m.UsageEvent.objects.exists()
    assert gateway.post(USAGE, event("r3", cost_usd=100)).status_code == 200  # at the ceiling: taken


def test_it_refuses_an_event_priced_from_the_catalog_above_the_ceiling(
    gateway: Api, clock: Clock, connections: None
) -> None:
    set_config(max_event_cost_usd=0.5)
    # gpt-5 at $1.25 in / $10 out per million: 1M input tokens cost $1.25.
    response = gateway.post(USAGE, event(input_tokens=1_000_000, output_tokens=0))

    assert assert_error(response, USAGE, "post", 422)["field"] == "cost_usd"


# --- spend ceiling per token -------------------------------------------------------------------


def test_it_refuses_a_report_that_takes_the_token_past_its_spend_ceiling(
    limited: Api, gateway: Api, clock: Clock, connections: None
) -> None:
    m.GatewayToken.objects.filter(name="limited").update(spend_ceiling_usd=Decimal("10"))
    assert (
        limited.post(USAGE, {"events": [event("r1", cost_usd=4), event("r2", cost_usd=5)]}).status_code == 200
    )

    response = limited.post(USAGE, {"events": [event("r3", cost_usd=0.5), event("r4", cost_usd=1)]})

    error = assert_error(response, USAGE, "post", 422, "token_spend_ceiling")
    assert error["field"] == "events[1].cost_usd"
    assert set(m.UsageEvent.objects.values_list("request_id", flat=True)) == {"r1", "r2"}
    assert limited.post(USAGE, event("r5", cost_usd=1)).status_code == 200  # exactly at the ceiling
    assert (
        gateway.post(USAGE, event("r6", connection_id="theirs", cost_usd=50)).status_code == 200
    )  # another token
    assert list(
        m.UsageEvent.objects.filter(token__name="limited")
        .order_by("request_id")
        .values_list("request_id", flat=True)
    ) == ["r1", "r2", "r5"]


def test_it_counts_a_tokens_spend_per_budget_period(limited: Api, clock: Clock, connections: None) -> None:
    set_config(budget_period="day")
    m.GatewayToken.objects.filter(name="limited").update(spend_ceiling_usd=Decimal("10"))
    assert limited.post(USAGE, event("r1", cost_usd=10)).status_code == 200
    assert limited.post(USAGE, event("r2", cost_usd=1)).status_code == 422

    clock.advance(days=1)
    later = event("r3", cost_usd=10, occurred_at=format_utc(clock.now))

    assert limited.post(USAGE, later).status_code == 200


def test_it_never_counts_plan_usage_toward_the_ceiling(limited: Api, clock: Clock) -> None:
    make_connection("mine", "claude", "oauth")
    m.GatewayToken.objects.filter(name="limited").update(spend_ceiling_usd=Decimal("0"))

    response = limited.post(USAGE, event(model="claude-sonnet-4-5", cost_usd=50))

    assert response.status_code == 200, response.content  # a subscription costs the budgets nothing


# --- rate of reports ---------------------------------------------------------------------------


def test_it_refuses_reports_past_the_rate_with_retry_after(
    gateway: Api, clock: Clock, connections: None, settings: Any
) -> None:
    settings.LADDER_REPORT_RATE_PER_MIN = 3
    path = OBSERVATIONS.format(connection_id="mine")
    for _ in range(3):
        assert gateway.post(path, {"status": 200, "headers": {}}).status_code == 200

    response = gateway.post(USAGE, event(cost_usd=1))

    assert_error(response, USAGE, "post", 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert not m.UsageEvent.objects.exists()
    assert gateway.get(CONNECTIONS).status_code == 200  # resolve scope: not a report


def test_it_counts_each_tokens_reports_apart(
    gateway: Api, limited: Api, clock: Clock, connections: None, settings: Any
) -> None:
    settings.LADDER_REPORT_RATE_PER_MIN = 1
    path = OBSERVATIONS.format(connection_id="mine")

    assert gateway.post(path, {"status": 200, "headers": {}}).status_code == 200
    assert limited.post(path, {"status": 200, "headers": {}}).status_code == 200
    assert gateway.post(path, {"status": 200, "headers": {}}).status_code == 429


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_accepts_reports_when_redis_is_down_and_says_so(
    gateway: Api, clock: Clock, connections: None, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.LADDER_REPORT_RATE_PER_MIN = 1
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"

    started = time.monotonic()
    statuses = [gateway.post(USAGE, event(f"r{n}", cost_usd=1)).status_code for n in range(5)]
    elapsed_s = time.monotonic() - started

    assert statuses == [200] * 5
    assert "rate limits not enforced" in caplog.text
    assert elapsed_s < 2.0  # one refused connection, then Redis is left alone for a while
