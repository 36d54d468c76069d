"""The resolution as the JSON document of STATE.md."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ladder.domain import (
    Empty,
    Exclusion,
    PoolEntry,
    Reason,
    Resolution,
    Rung,
    resolution_to_dict,
)
from ladder.domain.timefmt import format_utc, format_utc_or_none
from tests.domain.builders import NOW, concrete, key, later, logical, plan, reading, run, win

PLUS_TWO = timezone(timedelta(hours=2))
MINUS_FIVE = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 8, 22, 12, 0, tzinfo=UTC), "2026-08-22T12:00:00Z"),
        (datetime(2026, 8, 22, 12, 0, 5, tzinfo=UTC), "2026-08-22T12:00:05Z"),
        (datetime(2026, 8, 22, 12, 0, 0, 500, tzinfo=UTC), "2026-08-22T12:00:00.000500Z"),
        (datetime(2026, 8, 22, 12, 0, 0, 250000, tzinfo=UTC), "2026-08-22T12:00:00.250000Z"),
        (datetime(2026, 8, 22, 14, 0, tzinfo=PLUS_TWO), "2026-08-22T12:00:00Z"),
        (datetime(2026, 8, 22, 21, 30, tzinfo=MINUS_FIVE), "2026-08-23T02:30:00Z"),
        (datetime(2027, 1, 1, 1, 0, 0, 1, tzinfo=PLUS_TWO), "2026-12-31T23:00:00.000001Z"),
    ],
)
def test_it_writes_times_in_utc_with_microseconds_only_when_nonzero(moment: datetime, text: str) -> None:
    assert format_utc(moment) == text
    assert format_utc_or_none(moment) == text


def test_it_writes_no_time_as_null() -> None:
    assert format_utc_or_none(None) is None


def _resolution() -> Resolution:
    return Resolution(
        model="auto/thrifty",
        grouping="thrifty",
        category=None,
        resolved_at=datetime(2026, 8, 22, 14, 0, 0, 0, tzinfo=PLUS_TWO),
        pool=(PoolEntry("claude", "claude-sonnet-4-5", Rung.PREMIUM, None, ("k1", "k2")),),
        excluded=(
            Exclusion("claude", "claude-sonnet-4-5", "ghost", None, Reason.UNKNOWN_CONNECTION, "unknown"),
            Exclusion(
                "claude", "claude-sonnet-4-5", "c2", Rung.SUBSCRIPTION, Reason.QUOTA_EXHAUSTED, "window 5h"
            ),
        ),
        empty=None,
        refresh=("c2",),
    )


def test_it_writes_the_documented_keys_in_order() -> None:
    document = resolution_to_dict(_resolution())
    assert list(document) == [
        "model",
        "grouping",
        "category",
        "resolved_at",
        "pool",
        "excluded",
        "empty",
        "refresh",
    ]
    assert list(document["pool"][0]) == [
        "provider",
        "model",
        "rung",
        "rung_index",
        "connection_id",
        "allowed_connection_ids",
    ]
    assert list(document["excluded"][0]) == ["provider", "model", "connection_id", "rung", "reason", "detail"]


def test_it_writes_the_values() -> None:
    document = resolution_to_dict(_resolution())
    assert document == {
        "model": "auto/thrifty",
        "grouping": "thrifty",
        "category": None,
        "resolved_at": "2026-08-22T12:00:00Z",
        "pool": [
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "rung": "premium",
                "rung_index": 4,
                "connection_id": None,
                "allowed_connection_ids": ["k1", "k2"],
            }
        ],
        "excluded": [
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "connection_id": "ghost",
                "rung": None,
                "reason": "unknown_connection",
                "detail": "unknown",
            },
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "connection_id": "c2",
                "rung": "subscription",
                "reason": "quota_exhausted",
                "detail": "window 5h",
            },
        ],
        "empty": None,
        "refresh": ["c2"],
    }
    assert type(document["pool"][0]["rung_index"]) is int


def test_it_writes_the_empty_pool_with_code_message_and_retry() -> None:
    resolution = Resolution(
        "auto/subscription",
        "subscription",
        "coding",
        NOW,
        (),
        (),
        Empty(
            "no_verified_subscription_quota", "nothing left", datetime(2026, 8, 22, 15, 30, tzinfo=PLUS_TWO)
        ),
        (),
    )
    document = resolution_to_dict(resolution)
    assert document["empty"] == {
        "code": "no_verified_subscription_quota",
        "message": "nothing left",
        "retry_at": "2026-08-22T13:30:00Z",
    }
    assert list(document["empty"]) == ["code", "message", "retry_at"]
    assert document["category"] == "coding"
    none = resolution_to_dict(
        Resolution("auto/thrifty", "thrifty", None, NOW, (), (), Empty("x", "y", None), ())
    )
    assert none["empty"] == {"code": "x", "message": "y", "retry_at": None}


def test_it_renders_a_real_resolution_as_json() -> None:
    s = plan("s", quota=reading(win(0.0, reset=datetime(2026, 8, 22, 15, 0, 0, 123, tzinfo=PLUS_TWO))))
    k = key("k", cooldown_until=later(30))
    resolution = run(
        "auto/thrifty",
        s,
        k,
        candidates=[
            concrete(s, "planned", "plan-model"),
            logical(["k", "ghost"], "metered-co", "cheap-model"),
        ],
    )
    document = resolution_to_dict(resolution)
    assert json.loads(json.dumps(document)) == document
    assert document["empty"]["code"] == "all_rungs_exhausted"
    assert document["empty"]["retry_at"] == "2026-08-22T12:00:30Z"
    assert [(x["connection_id"], x["rung"], x["reason"]) for x in document["excluded"]] == [
        ("s", "subscription", "quota_exhausted"),
        ("k", "cheap", "cooling_down"),
        ("ghost", None, "unknown_connection"),
    ]
    assert all(isinstance(x["detail"], str) and x["detail"] for x in document["excluded"])
