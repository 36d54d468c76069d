"""Passive rate-limit headers of metered and free API keys, and their per-window 429s."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers import ADAPTERS
from tests.providers.conftest import NOW, FakeUpstream, load_fixture, roundtrip_case


def passive_reading(kind: str, call: str, upstream: FakeUpstream, client: httpx.Client) -> Reading:
    response = roundtrip_case(upstream, client, load_fixture(kind)["calls"][call]["response"])
    reading = ADAPTERS[kind].read_headers(response.headers, NOW)
    assert reading is not None
    assert (reading.source, reading.verifiable, reading.fetched_at) == ("headers", True, NOW)
    return reading


def after(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def summary(reading: Reading) -> list[tuple[str, float, datetime | None]]:
    return [(w.name, round(w.remaining_pct, 4), w.reset_at) for w in reading.windows]


def test_it_reads_groq_requests_per_day_and_tokens_per_minute(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    reading = passive_reading("groq", "chat_completion_headers", upstream, client)

    assert summary(reading) == [("requests-day", 98.7, after(86.4)), ("tokens-minute", 97.0, after(1.8))]


def test_it_reads_cerebras_buckets_with_float_second_resets(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    reading = passive_reading("cerebras", "chat_completion_headers", upstream, client)

    assert summary(reading) == [
        ("requests-day", round(100 * 14212 / 14400, 4), after(43200.382867097855)),
        ("tokens-minute", round(100 * 59120 / 60000, 4), after(11.382867097854614)),
    ]


def test_it_reads_mistral_minute_and_monthly_windows(upstream: FakeUpstream, client: httpx.Client) -> None:
    reading = passive_reading("mistral", "chat_completion_headers", upstream, client)

    assert summary(reading) == [
        ("requests-minute", 95.0, None),
        ("tokens-minute", round(100 * 499911 / 500000, 4), after(41)),
        ("tokens-month", round(100 * 873450120 / 1000000000, 4), datetime(2026, 10, 1, tzinfo=UTC)),
    ]


def test_it_reads_the_older_mistral_header_family() -> None:
    headers = {
        "ratelimitbysize-limit": "500000",
        "ratelimitbysize-remaining": "250000",
        "ratelimitbysize-reset": "30",
    }

    reading = ADAPTERS["mistral"].read_headers(headers, NOW)

    assert reading is not None
    assert summary(reading) == [("tokens-minute", 50.0, after(30))]


def test_it_reads_anthropic_api_windows_with_rfc3339_resets(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    reading = passive_reading("anthropic-api", "messages_headers", upstream, client)

    one_second = datetime(2026, 9, 1, 12, 0, 1, tzinfo=UTC)
    assert summary(reading) == [
        ("requests-minute", 99.95, one_second),
        ("input-tokens-minute", 99.7, one_second),
        ("output-tokens-minute", 99.75, one_second),
        ("tokens-minute", round(100 * 2393000 / 2400000, 4), one_second),
    ]


def test_it_reads_openai_windows_with_go_duration_resets(
    upstream: FakeUpstream, client: httpx.Client
) -> None:
    reading = passive_reading("openai-api", "chat_completion_headers", upstream, client)

    assert summary(reading) == [
        ("requests-minute", 99.98, after(0.012)),
        ("tokens-minute", 99.997, after(0.001)),
    ]


def test_it_reads_headers_whatever_their_case() -> None:
    headers = {"X-RateLimit-Limit-Requests": "1000", "X-RATELIMIT-REMAINING-REQUESTS": "500"}

    reading = ADAPTERS["groq"].read_headers(headers, NOW)

    assert reading is not None
    assert reading.windows == (Window("requests-day", 50.0),)


def test_it_reads_a_zero_remaining_as_spent_even_without_a_limit() -> None:
    headers = load_fixture("cerebras")["errors"]["requests_per_day_exhausted"]["headers"]

    reading = ADAPTERS["cerebras"].read_headers(headers, NOW)

    assert reading is not None
    assert reading.windows == (Window("requests-day", 0.0, datetime(2026, 9, 2, tzinfo=UTC)),)


@pytest.mark.parametrize("kind", ["groq", "cerebras", "mistral", "anthropic-api", "openai-api"])
def test_it_has_no_reading_when_the_headers_carry_no_window(kind: str) -> None:
    headers = {"content-type": "application/json", "x-ratelimit-remaining-requests": "n/a"}
    assert ADAPTERS[kind].read_headers(headers, NOW) is None


def test_it_treats_a_spent_mistral_month_as_exhaustion_until_month_end() -> None:
    headers = {"x-ratelimitbysize-limit-month": "1000000000", "x-ratelimitbysize-remaining-month": "0"}
    body = load_fixture("mistral")["errors"]["rate_limited"]["body"]

    failure = ADAPTERS["mistral"].classify_failure(429, headers, body, NOW)

    assert (failure.classification, failure.window) == ("quota_exhausted", "tokens-month")
    assert failure.reset_at == datetime(2026, 10, 1, tzinfo=UTC)


def test_it_treats_a_groq_requests_per_day_429_as_exhaustion() -> None:
    body = {
        "error": {
            "message": "Rate limit reached … on requests per day (RPD): Limit 1000. Please try again in 2m0s."
        }
    }

    failure = ADAPTERS["groq"].classify_failure(429, {}, body, NOW)

    assert (failure.classification, failure.window, failure.reset_at) == (
        "quota_exhausted",
        "requests-day",
        after(120),
    )
