from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection as connection_db
from django.db import transaction
from django.test.utils import CaptureQueriesContext

from ladder.domain.types import Reading, Window
from ladder.models import Connection, CredentialAccess, FailureEvent, QuotaReading, QuotaWindow
from ladder.selectors.snapshot import configuration_get, live_state_since, readings_latest, state_versions_get
from ladder.services.readings import ClaimLost, StoredReading, reading_record, reading_store, readings_purge

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def connection() -> Connection:
    return Connection.objects.create(id="c1", provider="claude", auth_type="oauth")


def reading(*windows: tuple[str, float], at: datetime = NOW, **kwargs: Any) -> Reading:
    return Reading(
        fetched_at=at,
        windows=tuple(Window(name, pct, reset_at=kwargs.pop("reset_at", None)) for name, pct in windows),
        **kwargs,
    )


def store(**kwargs: Any) -> StoredReading:
    """A reading written as the refresh writes a poll's (``reading_store``: a claim, connection updates)."""
    with transaction.atomic():
        return reading_store(config=configuration_get().to_domain(), **kwargs)


def latches(stored_id: int) -> dict[str, bool]:
    return dict(QuotaWindow.objects.filter(reading_id=stored_id).values_list("name", "latched"))


def test_it_refuses_a_reading_dated_more_than_300_s_in_the_future(connection: Connection) -> None:
    with pytest.raises(ValidationError) as error:
        reading_record(
            connection_id="c1", reading=reading(("5h", 50), at=NOW + timedelta(seconds=301)), now=NOW
        )

    assert "fetched_at" in error.value.message_dict
    assert "fetched_at" in error.value.message_dict["fetched_at"][0]
    assert not QuotaReading.objects.exists()
    stored = reading_record(
        connection_id="c1", reading=reading(("5h", 50), at=NOW + timedelta(seconds=299)), now=NOW
    )
    assert stored.is_latest


def test_it_refuses_a_window_outside_0_to_100_and_duplicate_names(connection: Connection) -> None:
    with pytest.raises(ValidationError) as error:
        reading_record(connection_id="c1", reading=reading(("5h", 101), ("7d", -1)), now=NOW)
    assert set(error.value.message_dict) == {"windows[0].remaining_pct", "windows[1].remaining_pct"}

    with pytest.raises(ValidationError) as error:
        reading_record(connection_id="c1", reading=reading(("5h", 10), ("5h", 20)), now=NOW)
    assert "windows[1].name" in error.value.message_dict
    assert not QuotaReading.objects.exists()


def test_it_refuses_an_unknown_connection() -> None:
    with pytest.raises(Connection.DoesNotExist):
        reading_record(connection_id="nope", reading=reading(("5h", 10)), now=NOW)


def test_it_stores_the_reading_with_its_windows(connection: Connection) -> None:
    reset = NOW + timedelta(hours=2)
    stored = reading_record(
        connection_id="c1",
        reading=Reading(
            fetched_at=NOW,
            windows=(Window("5h", 63, reset), Window("7d-opus", 20, None, scope_models=("*opus*",))),
            observed_overage="hard-stop",
        ),
        now=NOW,
    )

    latest = readings_latest()["c1"]
    assert latest == stored.reading
    assert [(w.name, w.remaining_pct, w.reset_at, w.scope_models) for w in latest.windows] == [
        ("5h", 63, reset, ()),
        ("7d-opus", 20, None, ("*opus*",)),
    ]
    assert latest.observed_overage == "hard-stop"


def test_it_latches_at_the_cutoff_and_clears_only_above_the_floor(connection: Connection) -> None:
    sequence = [(50, False), (2, True), (4, True), (5, True), (1, True), (5.5, False), (3, False)]
    for step, (pct, expected) in enumerate(sequence):
        stored = reading_record(
            connection_id="c1", reading=reading(("5h", pct), at=NOW + timedelta(seconds=step)), now=NOW
        )
        assert stored.reading.windows[0].latched is expected, (step, pct)
        assert latches(stored.id) == {"5h": expected}


def test_it_latches_at_the_connections_reserve_and_clears_above_its_shifted_floor(
    connection: Connection,
) -> None:
    # A reserve of 20 with the defaults (cutoff 2, floor 5): out at ≤ 20 %, back above 23 %.
    Connection.objects.filter(pk="c1").update(reserve_pct=20)
    sequence = [(50, False), (20.5, False), (20, True), (22, True), (23, True), (23.5, False), (21, False)]
    for step, (pct, expected) in enumerate(sequence):
        stored = reading_record(
            connection_id="c1", reading=reading(("5h", pct), at=NOW + timedelta(seconds=step)), now=NOW
        )
        assert stored.reading.windows[0].latched is expected, (step, pct)
        assert latches(stored.id) == {"5h": expected}


def test_it_resets_the_backoff_level_only_above_the_connections_own_floor(connection: Connection) -> None:
    Connection.objects.filter(pk="c1").update(backoff_level=3, reserve_pct=20)

    reading_record(connection_id="c1", reading=reading(("5h", 22)), now=NOW)
    assert Connection.objects.get(pk="c1").backoff_level == 3

    reading_record(connection_id="c1", reading=reading(("5h", 24), at=NOW + timedelta(seconds=1)), now=NOW)
    assert Connection.objects.get(pk="c1").backoff_level == 0


def test_it_polls_no_sooner_than_the_operators_minimum_interval(connection: Connection) -> None:
    Connection.objects.filter(pk="c1").update(min_poll_interval_s=300)

    stored = store(
        connection_id="c1",
        reading=reading(("5h", 80)),
        now=NOW,
        connection_updates={"last_polled_at": NOW},
    )
    assert stored.next_refresh_at == NOW + timedelta(seconds=300)

    # A window resetting sooner would bring the poll forward; the floor still wins (DESIGN L5).
    soon = NOW + timedelta(seconds=20)
    stored = store(
        connection_id="c1",
        reading=reading(("5h", 0), reset_at=soon, at=NOW + timedelta(seconds=1)),
        now=NOW + timedelta(seconds=1),
        connection_updates={"last_polled_at": NOW + timedelta(seconds=1)},
    )
    assert stored.next_refresh_at == NOW + timedelta(seconds=301)


def test_it_postpones_the_poll_after_header_readings_by_the_poll_interval(connection: Connection) -> None:
    Connection.objects.filter(pk="c1").update(min_poll_interval_s=100, last_polled_at=NOW)

    reading_record(connection_id="c1", reading=reading(("5h", 80), source="headers"), now=NOW)

    # Fresh for 180 + 100 s, polled one interval (100 s) before that: at 180 s, not at 100 s.
    assert Connection.objects.get(pk="c1").next_refresh_at == NOW + timedelta(seconds=180)


def test_it_takes_each_latch_from_the_same_name_window(connection: Connection) -> None:
    reading_record(connection_id="c1", reading=reading(("5h", 1), ("7d", 40)), now=NOW)

    stored = reading_record(
        connection_id="c1", reading=reading(("7d", 4), ("5h", 4), at=NOW + timedelta(seconds=1)), now=NOW
    )

    assert latches(stored.id) == {"5h": True, "7d": False}


def test_it_keeps_a_latch_across_an_unverifiable_reading_without_windows(connection: Connection) -> None:
    reading_record(connection_id="c1", reading=reading(("5h", 0)), now=NOW)
    reading_record(
        connection_id="c1",
        reading=Reading(NOW + timedelta(seconds=1), (), verifiable=False, note="malformed JSON"),
        now=NOW,
    )

    stored = reading_record(
        connection_id="c1", reading=reading(("5h", 4), at=NOW + timedelta(seconds=2)), now=NOW
    )

    assert latches(stored.id) == {"5h": True}


def test_it_resets_the_backoff_level_only_when_every_window_is_above_the_floor(
    connection: Connection,
) -> None:
    Connection.objects.filter(pk="c1").update(backoff_level=4)

    reading_record(connection_id="c1", reading=reading(("5h", 80), ("7d", 5)), now=NOW)
    assert Connection.objects.get(pk="c1").backoff_level == 4

    reading_record(
        connection_id="c1",
        reading=reading(("5h", 80), ("7d", 6), at=NOW + timedelta(seconds=1), verifiable=False),
        now=NOW,
    )
    assert Connection.objects.get(pk="c1").backoff_level == 4

    reading_record(
        connection_id="c1", reading=reading(("5h", 80), ("7d", 6), at=NOW + timedelta(seconds=2)), now=NOW
    )
    assert Connection.objects.get(pk="c1").backoff_level == 0


def test_it_schedules_the_next_poll_one_interval_later_or_at_a_sooner_reset(connection: Connection) -> None:
    stored = reading_record(connection_id="c1", reading=reading(("5h", 80)), now=NOW)
    assert stored.next_refresh_at == NOW + timedelta(seconds=60)
    assert Connection.objects.get(pk="c1").next_refresh_at == NOW + timedelta(seconds=60)

    soon = NOW + timedelta(seconds=20)
    stored = reading_record(
        connection_id="c1", reading=reading(("5h", 0), reset_at=soon, at=NOW + timedelta(seconds=1)), now=NOW
    )
    assert Connection.objects.get(pk="c1").next_refresh_at == soon + timedelta(seconds=1)


def test_it_postpones_the_poll_after_a_fresh_header_reading(connection: Connection) -> None:
    reading_record(connection_id="c1", reading=reading(("5h", 80), source="headers"), now=NOW)

    # max_reading_age_s 180 − refresh_interval_s 60: polled while the header reading is still fresh.
    assert Connection.objects.get(pk="c1").next_refresh_at == NOW + timedelta(seconds=120)


def test_it_never_brings_a_backed_off_poll_forward_for_a_header_reading(connection: Connection) -> None:
    backed_off = NOW + timedelta(seconds=900)
    Connection.objects.filter(pk="c1").update(next_refresh_at=backed_off)

    reading_record(connection_id="c1", reading=reading(("5h", 80), source="headers"), now=NOW)

    assert Connection.objects.get(pk="c1").next_refresh_at == backed_off


def test_it_bumps_the_live_version_not_the_state_version(connection: Connection) -> None:
    version, live = state_versions_get()

    reading_record(connection_id="c1", reading=reading(("5h", 80)), now=NOW)

    assert state_versions_get() == (version, live + 1)
    assert Connection.objects.get(pk="c1").live_seq == live + 1
    assert set(live_state_since(live)) == {"c1"}
    assert live_state_since(live + 1) == {}


def test_it_keeps_an_older_reading_as_history_only(connection: Connection) -> None:
    reading_record(connection_id="c1", reading=reading(("5h", 30), at=NOW), now=NOW)
    scheduled = Connection.objects.get(pk="c1").next_refresh_at
    before = state_versions_get()

    stored = reading_record(
        connection_id="c1", reading=reading(("5h", 90), at=NOW - timedelta(seconds=30)), now=NOW
    )

    assert not stored.is_latest
    assert QuotaReading.objects.count() == 2
    assert readings_latest()["c1"].windows[0].remaining_pct == 30
    assert Connection.objects.get(pk="c1").next_refresh_at == scheduled
    assert state_versions_get() == before


def test_it_writes_only_while_holding_the_claim(connection: Connection) -> None:
    mine = NOW + timedelta(seconds=60)
    Connection.objects.filter(pk="c1").update(claimed_until=NOW + timedelta(seconds=61))  # someone else's

    with pytest.raises(ClaimLost):
        store(connection_id="c1", reading=reading(("5h", 80)), now=NOW, claim_until=mine)
    assert not QuotaReading.objects.exists()

    Connection.objects.filter(pk="c1").update(claimed_until=mine)
    store(
        connection_id="c1",
        reading=reading(("5h", 80)),
        now=NOW,
        claim_until=mine,
        connection_updates={"last_polled_at": NOW},
    )
    row = Connection.objects.get(pk="c1")
    assert row.claimed_until is None
    assert row.last_polled_at == NOW


def test_it_purges_old_readings_but_keeps_each_connections_latest(connection: Connection) -> None:
    Connection.objects.create(id="c2", provider="codex", auth_type="oauth")
    old = NOW - timedelta(days=40)
    for step in range(3):
        reading_record(
            connection_id="c1", reading=reading(("5h", 50), at=old + timedelta(minutes=step)), now=NOW
        )
    recent = reading_record(connection_id="c1", reading=reading(("5h", 60), at=NOW), now=NOW)
    only_c2 = reading_record(connection_id="c2", reading=reading(("5h", 70), at=old), now=NOW)
    FailureEvent.objects.create(
        connection_id="c1", status=429, classification="rate_limited", observed_at=old, source="poll"
    )
    FailureEvent.objects.create(
        connection_id="c1", status=429, classification="rate_limited", observed_at=NOW
    )

    for at in (old, NOW):
        CredentialAccess.objects.create(
            connection_id="c1", token_name="gw", action="get", outcome="ok", at=at
        )

    deleted = readings_purge(older_than=NOW - timedelta(days=30), chunk_size=2)

    assert deleted == {"readings": 3, "failures": 1, "credential_accesses": 1}
    assert list(CredentialAccess.objects.values_list("at", flat=True)) == [NOW]
    assert set(QuotaReading.objects.values_list("id", flat=True)) == {recent.id, only_c2.id}
    assert set(QuotaWindow.objects.values_list("reading_id", flat=True)) == {recent.id, only_c2.id}
    assert FailureEvent.objects.count() == 1


def test_it_clamps_an_impossible_reset_of_a_header_reading_and_logs_it(
    connection: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    in_2199 = datetime(2199, 1, 1, tzinfo=UTC)
    headers = Reading(
        NOW - timedelta(seconds=10),
        (Window("5h", 50.0, in_2199), Window("7d", 60.0, NOW + timedelta(days=2))),
        "headers",
    )

    with caplog.at_level("WARNING", logger="ladder.services.readings"):
        stored = reading_record(connection_id="c1", reading=headers, now=NOW)

    five_hours = NOW - timedelta(seconds=10) + timedelta(hours=5)
    assert {w.name: w.reset_at for w in stored.reading.windows} == {
        "5h": five_hours,
        "7d": NOW + timedelta(days=2),
    }
    assert QuotaWindow.objects.get(name="5h").reset_at == five_hours
    [message] = [r.getMessage() for r in caplog.records if "impossible reset" in r.getMessage()]
    assert "connection=c1 window=5h source=headers" in message
    assert f"reported={in_2199.isoformat()} clamped={five_hours.isoformat()}" in message


def test_it_stores_each_windows_forecast_from_its_current_period(connection: Connection) -> None:
    """0.5 %/min from 50 % to the reserve's cutoff of 20 %: an hour; a window that burns nothing,
    none; the previous period (another reset) is not fitted."""
    Connection.objects.filter(pk="c1").update(reserve_pct=20.0)
    reset = NOW + timedelta(hours=4)

    def at(minutes: int, five_h: float, weekly: float, five_h_reset: datetime = reset) -> Reading:
        return Reading(
            fetched_at=NOW + timedelta(minutes=minutes),
            windows=(Window("5h", five_h, reset_at=five_h_reset), Window("7d", weekly)),
        )

    reading_record(connection_id="c1", reading=at(-30, 99, 80, NOW - timedelta(minutes=25)), now=NOW)
    reading_record(connection_id="c1", reading=at(-20, 60, 80), now=NOW)
    first = reading_record(connection_id="c1", reading=at(-10, 55, 80), now=NOW)
    assert first.reading.windows[0].exhausts_at == NOW + timedelta(hours=1)  # the same line
    with CaptureQueriesContext(connection_db) as queries:
        stored = reading_record(connection_id="c1", reading=at(0, 50, 80), now=NOW)

    assert [w.exhausts_at for w in stored.reading.windows] == [NOW + timedelta(hours=1), None]
    assert dict(QuotaWindow.objects.filter(reading_id=stored.id).values_list("name", "exhausts_at")) == {
        "5h": NOW + timedelta(hours=1),
        "7d": None,
    }
    # Reads only: PostgreSQL's bulk insert is an INSERT … SELECT FROM UNNEST (Django 5.2).
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]
    assert sum("ladder_quotawindow" in sql for sql in reads) == 2
    assert readings_latest()["c1"].windows[0].exhausts_at == NOW + timedelta(hours=1)


def test_a_forecast_past_the_reset_is_not_stored(connection: Connection) -> None:
    reset = NOW + timedelta(minutes=30)
    for minutes, pct in ((-20, 60), (-10, 55), (0, 50)):
        stored = reading_record(
            connection_id="c1",
            reading=Reading(NOW + timedelta(minutes=minutes), (Window("5h", pct, reset_at=reset),)),
            now=NOW,
        )
    assert stored.reading.windows[0].exhausts_at is None
    assert QuotaWindow.objects.get(reading_id=stored.id).exhausts_at is None
