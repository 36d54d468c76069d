from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.types import Reading, Window
from ladder.selectors.snapshot import readings_latest, state_version_get
from ladder.services.failures import failure_record
from ladder.services.readings import reading_record
from tests.gateway.conftest import make_connection

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
IN_2H = NOW + timedelta(hours=2)
IN_3D = NOW + timedelta(days=3)
SEVEN_DAYS = timedelta(days=7)
U = "anthropic-ratelimit-unified-"


@pytest.fixture(autouse=True)
def _no_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "ladder.services.failures.refresh_request", lambda *, connection_ids: list(connection_ids)
    )


def claude(connection_id: str = "c1", *, reading: bool = True, **fields: Any) -> m.Connection:
    windows = [
        {"name": "5h", "remaining_pct": 40.0, "reset_at": IN_2H},
        {"name": "7d", "remaining_pct": 70.0, "reset_at": IN_3D},
        {"name": "7d-opus", "remaining_pct": 50.0, "reset_at": IN_3D, "scope_models": ["*opus*"]},
    ]
    return make_connection(connection_id, windows=windows if reading else None, **fields)


def record(status: int = 429, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    params: dict[str, Any] = {
        "connection_id": "c1",
        "status": status,
        "headers": headers or {},
        "body": None,
        "model": "claude-sonnet-4-5",
        "observed_at": NOW,
        "now": NOW,
    }
    params.update(kwargs)
    return failure_record(**params)


def rejected(window: str, reset_at: datetime | None = None) -> dict[str, str]:
    headers = {f"{U}{window.replace('-', '_')}-status": "rejected"}
    if reset_at is not None:
        headers[f"{U}{window.replace('-', '_')}-reset"] = str(int(reset_at.timestamp()))
    return headers


def latest_windows(connection_id: str = "c1") -> dict[str, tuple[float, bool, datetime | None]]:
    reading = readings_latest(connection_ids=[connection_id])[connection_id]
    return {w.name: (w.remaining_pct, w.latched, w.reset_at) for w in reading.windows}


def test_it_clamps_a_seven_day_backoff_to_a_reset_in_two_hours() -> None:
    claude(backoff_level=20)  # 60 s × 2^20: capped at 7 days

    outcome = record(headers=rejected("5h"))

    assert outcome.classification == "quota_exhausted"
    assert outcome.window == "5h"
    assert outcome.reset_at == IN_2H  # from the latest reading: the failure named no reset
    assert outcome.cooldown_until == IN_2H
    connection = m.Connection.objects.get(pk="c1")
    assert connection.cooldown_until == IN_2H
    assert connection.backoff_level == 21


def test_it_keeps_the_backoff_when_the_reset_has_already_passed() -> None:
    claude(backoff_level=3)
    past = NOW - timedelta(minutes=5)

    outcome = record(headers=rejected("5h", past))

    assert outcome.reset_at == past
    assert outcome.cooldown_until == NOW + timedelta(seconds=60 * 2**3)


def test_it_takes_the_reset_from_the_failure_before_the_reading() -> None:
    claude(backoff_level=20)
    sooner = NOW + timedelta(minutes=30)

    outcome = record(headers=rejected("5h", sooner))

    assert outcome.reset_at == sooner
    assert outcome.cooldown_until == sooner
    assert latest_windows()["5h"] == (0.0, True, sooner)


def test_it_lets_retry_after_win_over_the_backoff_but_not_over_the_reset() -> None:
    claude(backoff_level=0)

    short = record(headers={**rejected("5h"), "retry-after": "600"})
    assert short.cooldown_until == NOW + timedelta(seconds=600)

    m.Connection.objects.filter(pk="c1").update(cooldown_until=None)
    long = record(headers={**rejected("5h"), "retry-after": str(int(timedelta(days=1).total_seconds()))})
    assert long.cooldown_until == IN_2H


def test_it_latches_the_named_window_on_a_copy_of_the_latest_reading() -> None:
    claude()
    before = m.QuotaReading.objects.count()

    record(headers=rejected("7d-opus"), model="claude-opus-4-1")

    assert m.QuotaReading.objects.count() == before + 1
    latest = m.QuotaReading.objects.order_by("-fetched_at", "-id").first()
    assert latest is not None
    assert latest.source == "error"
    assert latest.fetched_at == NOW  # the copy keeps the latest reading's age
    assert latest_windows() == {
        "5h": (40.0, False, IN_2H),
        "7d": (70.0, False, IN_3D),
        "7d-opus": (0.0, True, IN_3D),
    }


def test_it_latches_every_applicable_window_when_none_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from ladder.domain.types import Failure

    claude(backoff_level=20)
    monkeypatch.setattr(
        "ladder.services.failures.failure_classify",
        lambda connection, **kwargs: (Failure("quota_exhausted", detail="plan spent"), False),
    )

    outcome = record(model="claude-sonnet-4-5")

    assert outcome.window is None  # none was named: the cooldown cannot wait for the last reset
    assert outcome.windows == ("5h", "7d")  # but the answer lists every window latched (API.md)
    assert latest_windows() == {
        "5h": (0.0, True, IN_2H),
        "7d": (0.0, True, IN_3D),
        "7d-opus": (50.0, False, IN_3D),  # does not apply to Sonnet
    }
    assert outcome.cooldown_until == IN_2H  # never past the earliest reset it might be


def test_it_records_the_named_window_when_there_is_no_reading_yet() -> None:
    claude(reading=False)

    outcome = record(headers=rejected("5h", IN_2H))

    assert outcome.cooldown_until == NOW + timedelta(seconds=60)
    assert latest_windows() == {"5h": (0.0, True, IN_2H)}


def test_it_cools_a_rate_limit_down_briefly_without_a_latch() -> None:
    claude(backoff_level=4)

    outcomes = [
        record(observed_at=NOW + timedelta(seconds=i), now=NOW + timedelta(seconds=i)) for i in range(3)
    ]

    assert [o.classification for o in outcomes] == ["rate_limited"] * 3
    # 5 s × 2^n over the recent throttles
    assert [o.cooldown_until - NOW for o in outcomes] == [
        timedelta(seconds=5),
        timedelta(seconds=1 + 10),
        timedelta(seconds=2 + 20),
    ]
    assert latest_windows()["5h"] == (40.0, False, IN_2H)
    assert m.Connection.objects.get(pk="c1").backoff_level == 4


def test_it_takes_retry_after_for_a_rate_limit() -> None:
    claude()

    assert record(headers={"retry-after": "42"}).cooldown_until == NOW + timedelta(seconds=42)


def test_it_never_shortens_a_running_cooldown() -> None:
    claude(cooldown_until=NOW + timedelta(hours=1))

    outcome = record()

    assert outcome.classification == "rate_limited"
    assert outcome.cooldown_until == NOW + timedelta(hours=1)


def test_it_disables_a_connection_whose_credential_is_refused() -> None:
    claude()
    version = state_version_get()

    outcome = record(status=401)

    assert outcome.classification == "auth_failed"
    assert outcome.cooldown_until is None
    connection = m.Connection.objects.get(pk="c1")
    assert not connection.enabled
    assert connection.disabled_reason == "auth_failed"
    assert state_version_get() > version


def test_it_only_stores_an_upstream_error() -> None:
    claude()
    version = state_version_get()

    outcome = record(status=500, body={"error": {"type": "api_error", "message": "overloaded"}})

    assert outcome.classification == "upstream_error"
    assert state_version_get() == version
    connection = m.Connection.objects.get(pk="c1")
    assert (connection.enabled, connection.cooldown_until) == (True, None)


@pytest.mark.parametrize(
    ("status", "expected"), [(401, "auth_failed"), (403, "auth_failed"), (429, "upstream_error")]
)
def test_it_classifies_without_an_adapter_by_authentication_only(status: int, expected: str) -> None:
    make_connection("c1", "nobody-knows", "apikey")

    assert record(status=status).classification == expected


def test_it_stores_every_failure_for_the_dashboard() -> None:
    claude(backoff_level=20)

    record(headers=rejected("5h"), observed_at=NOW - timedelta(seconds=3))

    event = m.FailureEvent.objects.get()
    assert (event.connection_id, event.status, event.classification, event.model, event.window) == (
        "c1",
        429,
        "quota_exhausted",
        "claude-sonnet-4-5",
        "5h",
    )
    assert event.reset_at == IN_2H
    assert event.cooldown_until == IN_2H
    assert event.observed_at == NOW - timedelta(seconds=3)
    assert event.source == "gateway"


def test_it_survives_an_adapter_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    claude()

    def explode(*args: Any) -> Any:
        raise RuntimeError("adapter bug")

    monkeypatch.setattr("ladder.providers.claude.ClaudeOAuthAdapter.classify_failure", explode)

    assert record(status=429).classification == "upstream_error"


def test_it_refuses_an_unknown_connection() -> None:
    with pytest.raises(m.Connection.DoesNotExist):
        record(connection_id="ghost")
    assert not m.FailureEvent.objects.exists()


def test_it_clamps_a_running_two_day_cooldown_to_a_quota_reset_in_two_hours() -> None:
    claude(cooldown_until=NOW + timedelta(days=2), backoff_level=0)

    outcome = record(headers=rejected("5h"))

    assert outcome.classification == "quota_exhausted"
    assert outcome.cooldown_until == IN_2H
    assert m.Connection.objects.get(pk="c1").cooldown_until == IN_2H


def test_it_keeps_a_running_cooldown_longer_than_the_new_one_but_before_the_reset() -> None:
    claude(cooldown_until=NOW + timedelta(hours=1), backoff_level=0)

    outcome = record(headers=rejected("5h"))

    assert outcome.cooldown_until == NOW + timedelta(hours=1)


def test_it_copies_the_latest_readings_overage_into_the_error_reading() -> None:
    claude()
    reading = m.QuotaReading.objects.get()
    reading.observed_overage = "meters-to-paid"
    reading.save()

    record(headers=rejected("5h"))

    latest = readings_latest(connection_ids=["c1"])["c1"]
    assert latest.source == "error"
    assert latest.observed_overage == "meters-to-paid"
    assert set(latest_windows()) == {"5h", "7d", "7d-opus"}


def test_it_latches_every_rejected_window_and_cools_down_until_the_last_reset() -> None:
    claude(backoff_level=20)
    in_5d = NOW + timedelta(days=5)

    outcome = record(headers={**rejected("5h", IN_2H), **rejected("7d-opus", in_5d)}, model="claude-opus-4-1")

    assert (outcome.window, outcome.windows) == ("7d-opus", ("7d-opus", "5h"))
    assert outcome.reset_at == in_5d
    assert outcome.cooldown_until == in_5d
    windows = latest_windows()
    assert windows["5h"] == (0.0, True, IN_2H)
    assert windows["7d-opus"] == (0.0, True, in_5d)
    assert windows["7d"][:2] == (70.0, False)
    event = m.FailureEvent.objects.get()
    assert event.windows == [
        {"name": "7d-opus", "reset_at": in_5d.isoformat()},
        {"name": "5h", "reset_at": IN_2H.isoformat()},
    ]


def test_it_keeps_every_window_a_failure_named_spent_when_older_headers_arrive_late() -> None:
    claude()
    in_5d = NOW + timedelta(days=5)
    record(headers={**rejected("5h", IN_2H), **rejected("7d-opus", in_5d)}, model="claude-opus-4-1")

    late = Reading(
        NOW - timedelta(seconds=30),
        (Window("5h", 30.0, IN_2H), Window("7d-opus", 20.0, in_5d, scope_models=("*opus*",))),
        "headers",
    )
    stored = reading_record(connection_id="c1", reading=late, now=NOW)

    assert {w.name: (w.remaining_pct, w.latched) for w in stored.reading.windows} == {
        "5h": (0.0, True),
        "7d-opus": (0.0, True),
    }


def test_it_does_not_believe_a_five_hour_window_resetting_in_2199(caplog: pytest.LogCaptureFixture) -> None:
    claude(reading=False, backoff_level=20)
    in_2199 = datetime(2199, 1, 1, tzinfo=UTC)

    with caplog.at_level("WARNING", logger="ladder.services.readings"):
        outcome = record(headers=rejected("5h", in_2199))

    five_hours = NOW + timedelta(hours=5)
    assert (outcome.reset_at, outcome.cooldown_until) == (five_hours, five_hours)
    assert latest_windows()["5h"] == (0.0, True, five_hours)
    assert m.FailureEvent.objects.get().reset_at == five_hours
    [message] = [r.getMessage() for r in caplog.records if "impossible reset" in r.getMessage()]
    assert "connection=c1 window=5h" in message
    assert f"reported={in_2199.isoformat()}" in message
    assert f"clamped={five_hours.isoformat()}" in message


@pytest.mark.parametrize("reason", ["auth_failed", "needs_reauth"])
def test_another_401_on_a_disabled_connection_keeps_its_reason_and_reloads_nothing(reason: str) -> None:
    claude(enabled=False, disabled_reason=reason)
    version = state_version_get()

    outcome = record(status=401)

    assert outcome.classification == "auth_failed"
    row = m.Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (False, reason)  # needs_reauth says what to do
    assert state_version_get() == version  # no snapshot reload in every web process
