from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.timefmt import format_utc
from tests.gateway.conftest import NOW, Api, Clock, assert_error, assert_schema, make_connection

pytestmark = pytest.mark.django_db

PATH = "/api/v1/connections/{connection_id}/observations"
URL = "/api/v1/connections/c1/observations"
U = "anthropic-ratelimit-unified-"
IN_2H = NOW + timedelta(hours=2)


def headers(utilization_5h: float, utilization_7d: float = 0.2) -> dict[str, str]:
    return {
        f"{U}status": "allowed",
        f"{U}5h-utilization": str(utilization_5h),
        f"{U}5h-reset": str(int(IN_2H.timestamp())),
        f"{U}7d-utilization": str(utilization_7d),
        f"{U}7d-reset": str(int((NOW + timedelta(days=3)).timestamp())),
        "content-type": "text/event-stream",
    }


def observe(gateway: Api, body: dict[str, Any], url: str = URL) -> dict[str, Any]:
    response = gateway.post(url, body)
    assert response.status_code == 200, response.content
    return assert_schema(response, PATH, "post")


@pytest.fixture
def c1() -> m.Connection:
    return make_connection("c1")


def test_it_stores_the_passive_headers_as_a_reading(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    body = observe(gateway, {"status": 200, "headers": headers(0.37)})

    assert body == {
        "reading": {
            "fetched_at": "2026-09-15T12:00:00Z",
            "source": "headers",
            "verifiable": True,
            "observed_overage": None,
            "windows": [
                {
                    "name": "5h",
                    "remaining_pct": 63.0,
                    "reset_at": format_utc(IN_2H),
                    "scope_models": [],
                    "latched": False,
                    "exhausts_at": None,
                },
                {
                    "name": "7d",
                    "remaining_pct": 80.0,
                    "reset_at": format_utc(NOW + timedelta(days=3)),
                    "scope_models": [],
                    "latched": False,
                    "exhausts_at": None,
                },
            ],
        }
    }
    stored = m.QuotaReading.objects.get(connection_id="c1")
    assert stored.source == "headers"


def test_it_reads_the_shared_fixtures_passive_headers(
    gateway: Api, clock: Clock, c1: m.Connection, shared_dir: Path
) -> None:
    fixture = json.loads((shared_dir / "fixtures" / "quota" / "claude-oauth.json").read_text())
    reply = fixture["calls"]["messages_passive_headers"]["response"]

    body = observe(
        gateway,
        {"status": reply["status"], "headers": reply["headers"], "observed_at": "2026-09-01T12:00:00Z"},
    )

    assert body["reading"]["observed_overage"] == "meters-to-paid"  # overage-status: allowed
    assert {w["name"]: w["remaining_pct"] for w in body["reading"]["windows"]} == {"5h": 63.0, "7d": 78.0}


def test_it_latches_a_window_seen_at_the_cutoff_and_keeps_it_in_the_band(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    spent = observe(gateway, {"headers": headers(0.99)})
    assert spent["reading"]["windows"][0]["latched"] is True

    clock.advance(seconds=10)
    in_band = observe(gateway, {"headers": headers(0.96)})
    assert in_band["reading"]["windows"][0] == {
        "name": "5h",
        "remaining_pct": pytest.approx(4.0),
        "reset_at": format_utc(IN_2H),
        "scope_models": [],
        "latched": True,
        "exhausts_at": None,  # it rose since the last reading: it burns nothing
    }

    clock.advance(seconds=10)
    back = observe(gateway, {"headers": headers(0.5)})
    assert back["reading"]["windows"][0]["latched"] is False


def test_it_answers_null_when_the_headers_carry_no_quota(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    body = observe(
        gateway, {"status": 200, "headers": {"content-type": "application/json", "x-request-id": "abc"}}
    )

    assert body == {"reading": None}
    assert not m.QuotaReading.objects.exists()


def test_it_answers_null_for_a_provider_without_an_adapter(gateway: Api, clock: Clock) -> None:
    make_connection("c1", "nobody-knows", "apikey")

    assert observe(gateway, {"headers": headers(0.5)}) == {"reading": None}


def test_it_reads_x_ratelimit_headers_of_an_api_key(gateway: Api, clock: Clock) -> None:
    make_connection("c1", "openai", "apikey")

    body = observe(
        gateway,
        {
            "headers": {
                "x-ratelimit-limit-requests": "500",
                "x-ratelimit-remaining-requests": "250",
                "x-ratelimit-reset-requests": "30s",
            }
        },
    )

    assert body["reading"] is not None
    assert body["reading"]["source"] == "headers"


def test_it_refuses_an_observation_from_the_future(gateway: Api, clock: Clock, c1: m.Connection) -> None:
    response = gateway.post(
        URL, {"headers": headers(0.5), "observed_at": format_utc(NOW + timedelta(minutes=6))}
    )

    error = assert_error(response, PATH, "post", 422, "future_observation")
    assert error["field"] == "observed_at"
    assert not m.QuotaReading.objects.exists()


def test_it_answers_404_for_an_unknown_connection(gateway: Api, clock: Clock) -> None:
    response = gateway.post("/api/v1/connections/ghost/observations", {"headers": {}})

    assert_error(response, PATH, "post", 404, "connection_not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "headers"),
        ({"headers": "x-ratelimit: 1"}, "headers"),
        ({"headers": {"a": None}}, "headers.a"),
        ({"headers": {}, "status": "200"}, "status"),
        ({"headers": {}, "observed_at": 1788271200}, "observed_at"),
        ({"headers": {}, "body": "not here"}, "body"),
    ],
)
def test_it_names_the_field_of_a_malformed_observation(
    gateway: Api, clock: Clock, c1: m.Connection, body: dict[str, Any], field: str
) -> None:
    error = assert_error(gateway.post(URL, body), PATH, "post", 400)

    assert error["field"] == field


def test_it_needs_the_report_scope(client: Any, resolve_only_token: str, c1: m.Connection) -> None:
    response = Api(client, resolve_only_token).post(URL, {"headers": {}})

    assert_error(response, PATH, "post", 403, "insufficient_scope")


def test_it_answers_422_when_the_adapter_makes_a_reading_that_cannot_be_stored(
    gateway: Api, clock: Clock, c1: m.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ladder.domain.types import Reading, Window

    def twice(self: Any, headers: Any, now: Any) -> Reading:
        return Reading(now, (Window("5h", 50.0), Window("5h", 40.0)), "headers")

    monkeypatch.setattr("ladder.providers.claude.ClaudeOAuthAdapter.read_headers", twice)

    error = assert_error(gateway.post(URL, {"headers": headers(0.5)}), PATH, "post", 422, "invalid_reading")

    assert "duplicate window name" in error["message"]
    assert not m.QuotaReading.objects.exists()


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
def test_it_refuses_an_observation_time_outside_the_supported_range(
    gateway: Api, clock: Clock, c1: m.Connection, observed_at: str
) -> None:
    response = gateway.post(URL, {"status": 200, "headers": headers(0.37), "observed_at": observed_at})

    error = assert_error(response, PATH, "post", 422, code="time_out_of_range")
    assert error["field"] == "observed_at"


def test_it_keeps_a_window_spent_when_headers_older_than_its_429_arrive_after_it(
    gateway: Api, clock: Clock
) -> None:
    """The gateway reports a 429 at T+20 s, then the headers of a reply it got at T+10 s: those are
    older evidence than the 429 and must not lift its latch."""
    make_connection(
        "c1",
        windows=[
            {"name": "5h", "remaining_pct": 50.0, "reset_at": IN_2H},
            {"name": "7d", "remaining_pct": 80.0, "reset_at": NOW + timedelta(days=3)},
        ],
    )
    failure_url = "/api/v1/connections/c1/failures"
    spent = gateway.post(
        failure_url,
        {
            "status": 429,
            "headers": {f"{U}5h-status": "rejected"},
            "observed_at": format_utc(NOW + timedelta(seconds=20)),
        },
    )
    assert spent.json()["classification"] == "quota_exhausted"

    body = observe(
        gateway, {"headers": headers(0.37), "observed_at": format_utc(NOW + timedelta(seconds=10))}
    )

    by_name = {w["name"]: w for w in body["reading"]["windows"]}
    assert (by_name["5h"]["remaining_pct"], by_name["5h"]["latched"]) == (0.0, True)
    assert (by_name["7d"]["remaining_pct"], by_name["7d"]["latched"]) == (80.0, False)  # its news stands

    # Headers seen after the 429 are newer than it: they speak for the window again.
    later = observe(
        gateway, {"headers": headers(0.37), "observed_at": format_utc(NOW + timedelta(seconds=30))}
    )
    assert {w["name"]: w["remaining_pct"] for w in later["reading"]["windows"]}["5h"] == 63.0


def test_it_refuses_a_repeated_header_name_and_records_nothing(
    gateway: Api, clock: Clock, c1: m.Connection
) -> None:
    # Last one wins would read 5h as 90 % used; the first says 10 %: neither is a guess to store.
    text = json.dumps({"headers": headers(0.9)})
    raw = text.replace('"headers": {', f'"headers": {{"{U}5h-utilization": "0.1", ', 1)

    error = assert_error(gateway.post(URL, raw, raw=True), PATH, "post", 400, "invalid_request")

    field = f"headers.{U}5h-utilization"
    assert (error["field"], error["message"]) == (field, f"{field}: duplicate key")
    assert not m.QuotaReading.objects.exists()
