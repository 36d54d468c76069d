from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ladder.domain.types import Reading, Window
from ladder.providers import FetchError
from ladder.providers.zai import ZaiAdapter
from tests.providers.conftest import NOW, FakeUpstream, Route, connection_for, load_fixture

FIXTURE = load_fixture("zai-glm")
USAGE = "/api/monitor/usage/quota/limit"
AT_14 = datetime(2026, 9, 1, 14, 0, tzinfo=UTC)
WEEK_RESET = datetime(2026, 9, 5, 9, 0, tzinfo=UTC)
adapter = ZaiAdapter()


def quota_body() -> dict[str, Any]:
    return copy.deepcopy(FIXTURE["calls"]["quota_limit"]["response"]["body"])


def fetch_body(upstream: FakeUpstream, client: httpx.Client, body: object) -> Reading:
    upstream.serve("GET", USAGE, Route(body=body))
    return adapter.fetch(connection_for(upstream, "zai"), client, NOW)


def test_it_reads_used_percentages_as_remaining_windows(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.replay(FIXTURE)

    reading = adapter.fetch(connection_for(upstream, "zai"), client, NOW)

    assert reading.verifiable
    # percentage is the used share; nextResetTime is epoch ms; TIME_LIMIT (MCP tools) is not a window.
    assert reading.windows == (Window("5h", 75.0, AT_14), Window("7d", 91.0, WEEK_RESET))
    assert upstream.calls_to(USAGE)[0].headers["authorization"] == "Bearer <credential>"


def test_it_reads_the_credit_based_plan_from_its_counts(upstream: FakeUpstream, client: httpx.Client) -> None:
    reading = fetch_body(upstream, client, FIXTURE["variants_ok"]["credit_based_plan_2026"]["body"])

    assert reading.windows == (Window("5h", 95.0, AT_14), Window("7d", 90.0, WEEK_RESET))


def test_it_raises_the_auth_error_inside_a_200_body(upstream: FakeUpstream, client: httpx.Client) -> None:
    upstream.serve_case(FIXTURE, "invalid_key_in_body", method="GET", path=USAGE)

    with pytest.raises(FetchError) as raised:
        adapter.fetch(connection_for(upstream, "zai"), client, NOW)

    assert (raised.value.failure.classification, raised.value.status) == ("auth_failed", 200)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b["data"].pop("limits"),
        lambda b: b["data"]["limits"][0].update(unit=2),
        lambda b: b["data"]["limits"][0].pop("percentage"),
        lambda b: b["data"]["limits"][0].pop("number"),
    ],
)
def test_it_gives_an_unverifiable_reading_for_unknown_or_missing_fields(
    upstream: FakeUpstream, client: httpx.Client, mutate: Any
) -> None:
    body = quota_body()
    mutate(body)

    reading = fetch_body(upstream, client, body)

    assert not reading.verifiable
    assert reading.note
    assert all(w.remaining_pct > 0 for w in reading.windows)


def test_it_reads_the_zone_less_reset_in_the_1308_message_as_utc_plus_8() -> None:
    case = FIXTURE["errors"]["five_hour_exhausted"]

    failure = adapter.classify_failure(case["status"], case["headers"], case["body"], NOW)

    assert failure.reset_at == AT_14  # "2026-09-01 22:00:00" in UTC+8


def test_it_reads_the_window_and_reset_of_a_chinese_1308() -> None:
    # Wording reconstructed after the Chinese 1310 body; no captured Chinese 1308 was found.
    message = "已达到 5 小时的使用上限。您的限额将在 2026-09-01 22:00:00 重置。"
    body = {"error": {"code": "1308", "message": message}}

    failure = adapter.classify_failure(429, {}, body, NOW)

    assert (failure.classification, failure.window, failure.reset_at) == ("quota_exhausted", "5h", AT_14)
