from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.timefmt import format_utc
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection

pytestmark = pytest.mark.django_db

PATH = "/api/v1/connections/{connection_id}/failures"
URL = "/api/v1/connections/c1/failures"
RESOLVE = "/api/v1/pools/resolve"
U = "anthropic-ratelimit-unified-"
SONNET = [{"provider": "claude", "model": "claude-sonnet-4-5", "allowed_connection_ids": ["c1"]}]


@pytest.fixture
def c1() -> m.Connection:
    return make_connection(
        "c1",
        windows=[
            {"name": "5h", "remaining_pct": 30.0, "reset_at": NOW + timedelta(hours=2)},
            {"name": "7d", "remaining_pct": 80.0, "reset_at": NOW + timedelta(days=4)},
        ],
    )


def fail(gateway: Api, body: dict[str, Any], url: str = URL) -> dict[str, Any]:
    response = gateway.post(url, body)
    assert response.status_code == 200, response.content
    return assert_schema(response, PATH, "post")


def test_it_ends_a_seven_day_backoff_at_a_reset_two_hours_away(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    m.Connection.objects.filter(pk="c1").update(backoff_level=20)

    body = fail(
        gateway, {"status": 429, "headers": {f"{U}5h-status": "rejected"}, "model": "claude-sonnet-4-5"}
    )

    assert body == {
        "classification": "quota_exhausted",
        "cooldown_until": "2026-09-15T14:00:00Z",
        "reset_at": "2026-09-15T14:00:00Z",
        "window": "5h",
        "windows": ["5h"],
    }


def test_it_keeps_the_backoff_when_the_reset_is_already_past(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    past = NOW - timedelta(minutes=1)
    headers = {f"{U}5h-status": "rejected", f"{U}5h-reset": str(int(past.timestamp()))}

    body = fail(gateway, {"status": 429, "headers": headers})

    assert body["reset_at"] == format_utc(past)
    assert body["cooldown_until"] == format_utc(NOW + timedelta(seconds=60))


def test_it_excludes_the_latched_connection_from_the_next_resolution(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    fail(gateway, {"status": 429, "headers": {f"{U}5h-status": "rejected"}})

    clock.advance(seconds=61)  # the cooldown is over; the latch still holds until the reset
    body = assert_schema(
        gateway.post(RESOLVE, {"model": "auto/thrifty", "candidates": SONNET}), RESOLVE, "post"
    )

    assert body["pool"] == []
    assert [(x["reason"], x["detail"]) for x in body["excluded"]] == [
        ("quota_exhausted", "window 5h at 0.0% ≤ cutoff 2%")
    ]
    assert body["empty"]["retry_at"] == "2026-09-15T14:00:00Z"


def test_it_classifies_a_transient_429_as_a_rate_limit(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    body = fail(gateway, {"status": 429, "headers": {"retry-after": "7"}, "body": "slow down"})

    assert body == {
        "classification": "rate_limited",
        "cooldown_until": format_utc(NOW + timedelta(seconds=7)),
        "reset_at": None,
        "window": None,
        "windows": [],
    }


def test_it_disables_the_connection_on_an_authentication_failure(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    body = fail(gateway, {"status": 401, "body": {"error": {"type": "authentication_error"}}})

    assert body["classification"] == "auth_failed"
    resolution = assert_schema(
        gateway.post(RESOLVE, {"model": "auto/thrifty", "candidates": SONNET}), RESOLVE, "post"
    )
    assert [(x["reason"], x["detail"]) for x in resolution["excluded"]] == [
        ("disabled", "disabled (auth_failed)")
    ]


def test_it_stores_an_upstream_error(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    body = fail(gateway, {"status": 503, "observed_at": "2026-09-15T13:59:00+02:00"})

    assert body["classification"] == "upstream_error"
    event = m.FailureEvent.objects.get()
    assert event.observed_at == NOW - timedelta(minutes=1)


def test_it_answers_404_for_an_unknown_connection_whatever_the_body(gateway: Api, clock: Clock) -> None:
    for body, content_type in [
        ({"status": 429}, "application/json"),
        ("{not json", "application/json"),
        ("status=429", "application/x-www-form-urlencoded"),
    ]:
        response = gateway.post(
            "/api/v1/connections/ghost/failures", body, raw=isinstance(body, str), content_type=content_type
        )
        assert_error(response, PATH, "post", 404, "connection_not_found")
    assert_error(gateway.post("/api/v1/connections/bad%20id/failures", {}), PATH, "post", 404)


def test_it_refuses_an_observation_from_the_future(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    response = gateway.post(URL, {"status": 429, "observed_at": format_utc(NOW + timedelta(seconds=301))})

    error = assert_error(response, PATH, "post", 422, "future_observation")
    assert error["field"] == "observed_at"
    assert not m.FailureEvent.objects.exists()


def test_it_accepts_an_observation_barely_ahead_of_the_clock(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    assert fail(gateway, {"status": 500, "observed_at": format_utc(NOW + timedelta(seconds=300))})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "status"),
        ({"status": "429"}, "status"),
        ({"status": 99}, "status"),
        ({"status": 600}, "status"),
        ({"status": 429, "headers": ["retry-after: 5"]}, "headers"),
        ({"status": 429, "headers": {"retry-after": {"seconds": 5}}}, "headers.retry-after"),
        ({"status": 429, "model": 12}, "model"),
        ({"status": 429, "observed_at": "2026-09-15 12:00"}, "observed_at"),
        ({"status": 429, "extra": True}, "extra"),
    ],
)
def test_it_names_the_field_of_a_malformed_report(
    gateway: Api, clock: Clock, c1: m.Connection, body: dict[str, Any], field: str
) -> None:
    error = assert_error(gateway.post(URL, body), PATH, "post", 400)

    assert error["field"] == field
    assert not m.FailureEvent.objects.exists()


def test_it_needs_the_report_scope(client: Any, resolve_only_token: str, c1: m.Connection) -> None:
    assert_error(
        Api(client, resolve_only_token).post(URL, {"status": 429}), PATH, "post", 403, "insufficient_scope"
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "99999999999999999999"},
        {"retry-after": 1e30},
        {f"{U}5h-status": "rejected", "retry-after": "1e12"},
    ],
)
def test_it_caps_an_enormous_retry_after_instead_of_failing(
    gateway: Api, clock: Clock, c1: m.Connection, headers: dict[str, Any]
) -> None:
    body = fail(gateway, {"status": 429, "headers": headers, "model": "claude-sonnet-4-5"})

    assert body["cooldown_until"] is not None
    row = m.FailureEvent.objects.get()
    assert row.retry_after_s is None or row.retry_after_s <= 7 * 24 * 3600


@pytest.mark.parametrize(
    "observed_at",
    [
        "0001-01-01T00:00:00+00:00",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "2150-01-01T00:00:00Z",
        "1999-12-31T23:59:59Z",
    ],
)
def test_it_refuses_an_observed_at_outside_the_supported_range(
    gateway: Api, clock: Clock, c1: m.Connection, observed_at: str
) -> None:
    response = gateway.post(URL, {"status": 429, "headers": {}, "observed_at": observed_at})

    error = assert_error(response, PATH, "post", 422, code="time_out_of_range")
    assert error["field"] == "observed_at"
    assert not m.FailureEvent.objects.exists()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"status": 401, "status": 500}', "status"),
        ('{"status": 429, "headers": {"retry-after": "1", "retry-after": "9000"}}', "headers.retry-after"),
        (
            '{"status": 401, "body": {"errors": [{"type": "overloaded", "type": "authentication_error"}]}}',
            "body.errors[0].type",
        ),
    ],
    ids=["top-level", "nested-object", "list-item"],
)
def test_it_refuses_a_duplicate_key_and_records_nothing(
    gateway: Api, clock: Clock, c1: m.Connection, raw: str, field: str
) -> None:
    response = gateway.post(URL, raw, raw=True)

    error = assert_error(response, PATH, "post", 400, "invalid_request")
    assert (error["field"], error["message"]) == (field, f"{field}: duplicate key")
    assert not m.FailureEvent.objects.exists()
    connection = m.Connection.objects.get(pk="c1")
    assert (connection.enabled, connection.cooldown_until, connection.backoff_level) == (True, None, 0)


def test_it_lists_every_window_latched_and_cools_down_until_the_last_reset(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    m.Connection.objects.filter(pk="c1").update(backoff_level=20)
    in_3d = NOW + timedelta(days=3)
    headers = {
        f"{U}5h-status": "rejected",
        f"{U}7d_sonnet-status": "rejected",
        f"{U}7d_sonnet-reset": str(int(in_3d.timestamp())),
    }

    body = fail(gateway, {"status": 429, "headers": headers, "model": "claude-sonnet-4-5"})

    assert (body["window"], body["windows"]) == ("7d-sonnet", ["7d-sonnet", "5h"])
    assert body["reset_at"] == body["cooldown_until"] == format_utc(in_3d)


def test_it_clamps_a_five_hour_reset_reported_in_2199(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    m.Connection.objects.filter(pk="c1").update(backoff_level=20)
    headers = {f"{U}5h-status": "rejected", f"{U}5h-reset": "7239628800"}  # 2199-06-01

    body = fail(gateway, {"status": 429, "headers": headers})

    assert body["reset_at"] == body["cooldown_until"] == format_utc(NOW + timedelta(hours=5))


def test_it_strips_the_connections_key_from_a_reported_failure_body(
    gateway: Api, clock: Clock, c1: m.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-ant-api03-ReportedBackByTheGateway-0123456789"
    c1.set_credential(key)
    c1.save()
    quoted = {"error": {"type": "authentication_error", "message": f"Incorrect API key provided: {key}"}}
    suffix = {"error": {"type": "authentication_error", "message": f"key ending {key[-12:]} is invalid"}}

    with caplog.at_level("DEBUG"):
        fail(gateway, {"status": 401, "body": quoted})
        fail(gateway, {"status": 401, "body": suffix})

    details = list(m.FailureEvent.objects.order_by("id").values_list("detail", flat=True))
    assert details == ["Incorrect API key provided: [redacted]", "key ending [redacted] is invalid"]
    assert key[-12:] not in "\n".join(record.getMessage() for record in caplog.records)
