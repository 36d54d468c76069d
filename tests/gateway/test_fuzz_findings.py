"""Regressions for what schemathesis found (tests/reliability/test_api_fuzz.py): requests the schema admits
that the API refused as malformed, and a schema that admitted requests no answer but a 400 could meet."""

from __future__ import annotations

import pytest

from ladder import models as m
from ladder.domain import advertised_auto_ids
from ladder.domain.types import CATEGORIES
from ladder.gateway.schema import openapi_document
from tests.gateway.conftest import Api, Clock, assert_error, assert_schema, make_connection
from tests.gateway.test_openapi import request_validator

pytestmark = pytest.mark.django_db

RESOLVE = "/api/v1/pools/resolve"
USAGE = "/api/v1/usage"
FAILURES = "/api/v1/connections/{connection_id}/failures"
OBSERVATIONS = "/api/v1/connections/{connection_id}/observations"


@pytest.fixture
def key() -> m.Connection:
    return make_connection("key", "openai", "apikey")


def test_it_takes_a_whole_number_written_with_a_decimal_point(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    # JSON has one number type: JSON Schema's "integer" admits 429.0, so the API must too.
    failure = gateway.post("/api/v1/connections/key/failures", {"status": 429.0})
    usage = gateway.post(
        USAGE,
        {"request_id": "r1", "connection_id": "key", "model": "gpt-5-mini", "input_tokens": 1000.0},
    )

    assert assert_schema(failure, FAILURES, "post")["classification"] == "rate_limited"
    assert usage.status_code == 200, usage.content
    assert usage.json()["events"][0]["cost_usd"] == 0.00025


def test_it_still_refuses_a_fraction_where_a_whole_number_belongs(gateway: Api, key: m.Connection) -> None:
    response = gateway.post(
        USAGE, {"request_id": "r1", "connection_id": "key", "model": "gpt-5-mini", "input_tokens": 0.5}
    )

    error = assert_error(response, USAGE, "post", 400)
    assert error["field"] == "input_tokens"


@pytest.mark.parametrize("observed_at", ["1969-07-20T20:17:00Z", "2201-05-12T08:17:14+02:00"])
def test_it_answers_a_well_formed_time_out_of_range_with_a_422(
    gateway: Api, clock: Clock, key: m.Connection, observed_at: str
) -> None:
    body = {"headers": {}, "observed_at": observed_at}

    response = gateway.post("/api/v1/connections/key/observations", body)

    error = assert_error(response, OBSERVATIONS, "post", 422, code="time_out_of_range")
    assert error["field"] == "observed_at"
    assert "2000-01-01" in error["message"]


def test_it_answers_a_malformed_time_with_a_400(gateway: Api, key: m.Connection) -> None:
    body = {"headers": {}, "observed_at": "yesterday"}

    response = gateway.post("/api/v1/connections/key/observations", body)

    assert assert_error(response, OBSERVATIONS, "post", 400)["field"] == "observed_at"


def test_it_documents_input_times_as_date_times() -> None:
    # So that a schema-driven client (and schemathesis) sends times, not arbitrary text.
    schemas = openapi_document()["components"]["schemas"]
    for schema, name in (
        ("ObservationRequest", "observed_at"),
        ("FailureRequest", "observed_at"),
        ("UsageEvent", "occurred_at"),
    ):
        assert schemas[schema]["properties"][name]["format"] == "date-time"


def test_it_documents_exactly_the_auto_ids_that_resolve(gateway: Api, clock: Clock) -> None:
    documented = openapi_document()["components"]["schemas"]["ResolveRequest"]["properties"]["model"]["enum"]

    assert sorted(documented) == sorted(advertised_auto_ids(set(CATEGORIES)))
    for auto_id in documented:
        assert_schema(gateway.post(RESOLVE, {"model": auto_id}), RESOLVE, "post")
    assert not request_validator(RESOLVE).is_valid({"model": "gpt-4o"})
    assert_error(gateway.post(RESOLVE, {"model": "gpt-4o"}), RESOLVE, "post", 400, code="invalid_model")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (RESOLVE, {"model": "auto/thrifty", "candidates": [{"provider": " ", "model": "m"}]}, "provider"),
        (USAGE, {"request_id": "\t", "connection_id": "key", "model": "gpt-5-mini"}, "request_id"),
        (FAILURES, {"status": 429, "model": ""}, "model"),
    ],
)
def test_it_documents_that_names_and_ids_are_never_blank(
    gateway: Api, key: m.Connection, path: str, body: dict[str, object], field: str
) -> None:
    response = gateway.post(path.replace("{connection_id}", "key"), body)

    assert not request_validator(path).is_valid(body)
    assert assert_error(response, path, "post", 400)["field"].endswith(field)


def test_it_stores_times_whose_offset_postgresql_would_refuse(
    gateway: Api, clock: Clock, key: m.Connection
) -> None:
    # -18:31 is a valid ISO 8601 offset; PostgreSQL refuses offsets beyond ±15:59 (it was a 500 there).
    at_now = {"observed_at": "2026-09-14T17:29:00-18:31"}  # = 2026-09-15T12:00:00Z, the API clock

    failure = gateway.post("/api/v1/connections/key/failures", {"status": 500, **at_now})
    observation = gateway.post("/api/v1/connections/key/observations", {"headers": {}, **at_now})
    usage = gateway.post(
        USAGE,
        {
            "request_id": "r1",
            "connection_id": "key",
            "model": "gpt-5-mini",
            "occurred_at": "2026-09-16T06:31:00+18:31",
        },
    )

    assert assert_schema(failure, FAILURES, "post")["classification"] == "upstream_error"
    assert_schema(observation, OBSERVATIONS, "post")
    assert assert_schema(usage, USAGE, "post")["events"][0]["occurred_at"] == "2026-09-15T12:00:00Z"
    assert m.FailureEvent.objects.get().observed_at.isoformat() == "2026-09-15T12:00:00+00:00"
