from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers.kimi import KimiCodingAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("kimi-coding")
USAGE = "/coding/v1/usages"
WEEK_RESET = datetime(2026, 9, 5, 9, 0, 0, 716839, tzinfo=UTC)
FIVE_H_RESET = datetime(2026, 9, 1, 14, 0, 0, 717479, tzinfo=UTC)
adapter = KimiCodingAdapter()


def usages_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["usages"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "kimi-coding"), client, NOW)


def test_it_reads_the_weekly_and_five_hour_windows_from_strings(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "kimi-coding"), client, NOW)

    assert reading.verifiable
    assert reading.windows == (Window("7d", 100 * 1834 / 2048, WEEK_RESET), Window("5h", 30.5, FIVE_H_RESET))


def test_it_computes_remaining_from_used_when_remaining_is_absent(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    body = usages_body()
    del body["usage"]["remaining"]

    assert fetch_body(upstream, client, body).windows[0].remaining_pct == 100 * 1834 / 2048


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.pop("usage"),
        lambda b: b["usage"].update(limit="unlimited"),
        lambda b: b["limits"][0]["window"].update(timeUnit="TIME_UNIT_FORTNIGHT"),
        lambda b: b["limits"][0].pop("detail"),
    ],
)
def test_it_gives_an_unverifiable_reading_for_missing_or_renamed_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = usages_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.note


def test_it_classifies_a_403_without_a_usage_message_as_an_auth_failure() -> None:
    failure = adapter.classify_failure(403, {}, {"error": {"type": "invalid_authentication_error"}}, NOW)

    assert failure.classification == "auth_failed"


def test_it_reads_used_past_the_limit_as_none_left(upstream: FakeUpstream, client: httpx.Client) -> None:
    body = {"usage": {"limit": "100", "used": "120", "remaining": "20"}, "limits": []}

    reading = fetch_body(upstream, client, body)

    assert reading.verifiable
    assert reading.windows[0].remaining_pct == 0.0


def test_it_asks_for_a_usage_reread_after_an_exhaustion_403_only() -> None:
    exhausted = FIXTURE["errors"]["weekly_exhausted"]
    transient = FIXTURE["errors"]["transient_rate_limit"]

    weekly = adapter.classify_failure(403, exhausted["headers"], exhausted["body"], NOW)
    throttled = adapter.classify_failure(429, transient["headers"], transient["body"], NOW)

    assert weekly.classification == "quota_exhausted"
    assert adapter.wants_usage_recheck(403, weekly)
    assert not adapter.wants_usage_recheck(429, throttled)
