from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ladder.domain.types import Reading, Window
from ladder.models import Connection
from ladder.selectors.snapshot import readings_latest
from ladder.services.observations import observation_record
from ladder.services.readings import reading_record

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
U = "anthropic-ratelimit-unified-"


def passive_headers() -> dict[str, str]:
    return {
        f"{U}status": "allowed",
        f"{U}5h-utilization": "0.3",
        f"{U}5h-reset": str(int((NOW + timedelta(hours=2)).timestamp())),
    }


@pytest.fixture
def connection() -> Connection:
    return Connection.objects.create(id="c1", provider="claude", auth_type="oauth")


def test_it_keeps_the_polled_overage_after_a_header_observation(connection: Connection) -> None:
    reading_record(
        connection_id="c1",
        reading=Reading(
            fetched_at=NOW - timedelta(seconds=30),
            windows=(Window("5h", 80.0, NOW + timedelta(hours=2)),),
            observed_overage="meters-to-paid",
        ),
        now=NOW,
    )

    stored = observation_record(connection_id="c1", headers=passive_headers(), observed_at=NOW, now=NOW)

    assert stored is not None
    assert stored.observed_overage == "meters-to-paid"
    latest = readings_latest(connection_ids=["c1"])["c1"]
    assert latest.observed_overage == "meters-to-paid"
    assert latest.source == "headers"


def test_it_keeps_a_latched_scoped_window_the_headers_do_not_carry(connection: Connection) -> None:
    opus_reset = NOW + timedelta(days=2)
    reading_record(
        connection_id="c1",
        reading=Reading(
            fetched_at=NOW - timedelta(seconds=30),
            windows=(
                Window("5h", 80.0, NOW + timedelta(hours=2)),
                Window("7d-opus", 0.0, opus_reset, scope_models=("*opus*",)),
            ),
        ),
        now=NOW,
    )

    observation_record(connection_id="c1", headers=passive_headers(), observed_at=NOW, now=NOW)

    latest = readings_latest(connection_ids=["c1"])["c1"]
    windows = {w.name: w for w in latest.windows}
    assert windows["5h"].remaining_pct == pytest.approx(70.0)
    opus = windows["7d-opus"]
    assert (opus.remaining_pct, opus.reset_at, opus.scope_models, opus.latched) == (
        0.0,
        opus_reset,
        ("*opus*",),
        True,
    )


def test_it_drops_a_carried_window_whose_reset_has_passed(connection: Connection) -> None:
    reading_record(
        connection_id="c1",
        reading=Reading(
            fetched_at=NOW - timedelta(hours=3),
            windows=(Window("7d-opus", 0.0, NOW - timedelta(minutes=1), scope_models=("*opus*",)),),
        ),
        now=NOW - timedelta(hours=3),
    )

    observation_record(connection_id="c1", headers=passive_headers(), observed_at=NOW, now=NOW)

    latest = readings_latest(connection_ids=["c1"])["c1"]
    assert [w.name for w in latest.windows] == ["5h"]


def test_it_keeps_the_merged_reading_unverifiable_when_the_previous_one_was(connection: Connection) -> None:
    reading_record(
        connection_id="c1",
        reading=Reading(fetched_at=NOW - timedelta(seconds=30), verifiable=False, note="renamed field"),
        now=NOW,
    )

    stored = observation_record(connection_id="c1", headers=passive_headers(), observed_at=NOW, now=NOW)

    assert stored is not None
    assert stored.verifiable is False
