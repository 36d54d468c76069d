from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pytest_django import DjangoAssertNumQueries

from ladder.models import (
    Connection,
    LadderConfiguration,
    ModelCatalogEntry,
    QuotaReading,
    QuotaWindow,
    UsageEvent,
)
from ladder.selectors.snapshot import (
    catalog_uncurated_kinds,
    live_state_since,
    readings_latest,
    snapshot_load,
    state_version_get,
    state_versions_get,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
SNAPSHOT_QUERIES = 7


def make_connections(count: int, *, readings_each: int = 3) -> None:
    for index in range(count):
        connection = Connection.objects.create(
            id=f"c{index:03d}", provider="claude", auth_type="oauth", position=count - index
        )
        for age in range(readings_each):
            reading = QuotaReading.objects.create(
                connection=connection, fetched_at=NOW - timedelta(minutes=age)
            )
            QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=50 - age, position=0)
            QuotaWindow.objects.create(reading=reading, name="7d", remaining_pct=80, position=1)


def test_it_builds_the_snapshot_from_the_rows() -> None:
    LadderConfiguration.load()
    LadderConfiguration.objects.update(exit_cutoff_pct=3.0, rung_budget_usd={"cheap": 5})
    first = Connection.objects.create(
        id="b", provider="claude", auth_type="oauth", position=0, models=["claude-sonnet-4-5"]
    )
    Connection.objects.create(id="a", provider="claude", position=0, keyless=True)
    Connection.objects.create(id="0", provider="claude", position=1, overage_override="meters-to-paid")
    newest = QuotaReading.objects.create(connection=first, fetched_at=NOW, observed_overage="meters-to-paid")
    # Inserted later but fetched earlier: not the latest reading.
    QuotaReading.objects.create(connection=first, fetched_at=NOW - timedelta(hours=1))
    QuotaWindow.objects.create(
        reading=newest, name="7d-opus", remaining_pct=0, scope_models=["*opus*"], position=1
    )
    QuotaWindow.objects.create(
        reading=newest,
        name="5h",
        remaining_pct=63.5,
        reset_at=NOW + timedelta(hours=2),
        position=0,
        latched=True,
    )

    snapshot = snapshot_load(now=NOW)

    assert snapshot.config.exit_cutoff_pct == 3.0
    assert dict(snapshot.config.rung_budget_usd) == {"cheap": 5.0}
    assert [c.id for c in snapshot.connections] == ["a", "b", "0"]
    by_id = snapshot.connections_by_id
    assert by_id["a"].keyless
    assert by_id["a"].reading is None
    assert by_id["a"].auth_type is None
    assert by_id["0"].overage_override == "meters-to-paid"
    reading = by_id["b"].reading
    assert reading is not None
    assert reading.fetched_at == NOW
    assert reading.observed_overage == "meters-to-paid"
    assert [(w.name, w.remaining_pct, w.latched) for w in reading.windows] == [
        ("5h", 63.5, True),
        ("7d-opus", 0, False),
    ]
    assert reading.windows[1].scope_models == ("*opus*",)
    assert by_id["b"].models == ("claude-sonnet-4-5",)
    assert by_id["0"].models is None


def test_it_loads_the_seeded_catalogs_in_order() -> None:
    snapshot = snapshot_load(now=NOW)

    assert len(snapshot.billing_catalog) == 17
    assert snapshot.catalog_by_key[("claude", "oauth")].billing == "subscription"
    assert ("qwen", "oauth") not in snapshot.catalog_by_key
    assert len(snapshot.models) == 40
    assert (snapshot.models[0].provider, snapshot.models[0].model) == ("claude", "claude-opus-4-1")
    assert snapshot.models[0].input_usd_per_mtok == 15.0
    assert snapshot.models_by_key[("cursor", "auto")].input_usd_per_mtok is None


def test_it_follows_the_model_catalog_position() -> None:
    ModelCatalogEntry.objects.filter(provider="claude", model="claude-haiku-4-5").update(position=-1)

    snapshot = snapshot_load(now=NOW)

    assert snapshot.models[0].model == "claude-haiku-4-5"


@pytest.mark.parametrize("count", [5, 50])
def test_it_takes_a_constant_number_of_queries(
    count: int, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    LadderConfiguration.load()
    make_connections(count)

    with django_assert_max_num_queries(SNAPSHOT_QUERIES):
        snapshot = snapshot_load(now=NOW)

    assert len(snapshot.connections) == count
    assert all(
        c.reading is not None and c.reading.windows[0].remaining_pct == 50 for c in snapshot.connections
    )


def test_it_reads_the_defaults_without_writing_a_configuration() -> None:
    snapshot = snapshot_load(now=NOW)

    assert snapshot.config.max_reading_age_s == 180.0
    assert not LadderConfiguration.objects.exists()


@pytest.mark.parametrize(
    ("period", "expected_cheap"),
    [("month", 1.5 + 2.0), ("day", 2.0)],
)
def test_it_sums_the_spend_of_the_current_budget_period(period: str, expected_cheap: float) -> None:
    LadderConfiguration.load()
    LadderConfiguration.objects.update(budget_period=period)
    month_start = datetime(2026, 9, 1, tzinfo=UTC)
    events = [
        ("r1", "cheap", "1.5", month_start),  # first instant of the month
        ("r2", "cheap", "2.0", NOW - timedelta(hours=1)),  # today
        ("r3", "cheap", "9.0", month_start - timedelta(microseconds=1)),  # last month
        ("r4", "cheap", "9.0", datetime(2026, 10, 1, tzinfo=UTC)),  # next month
        ("r5", "premium", "0.25", NOW),
        ("r6", None, "7.0", NOW),  # not priced at a budget rung
    ]
    for request_id, rung, cost, occurred_at in events:
        UsageEvent.objects.create(
            request_id=request_id, budget_rung=rung, cost_usd=Decimal(cost), occurred_at=occurred_at
        )

    snapshot = snapshot_load(now=NOW)

    assert snapshot.spend_usd == {"cheap": pytest.approx(expected_cheap), "premium": 0.25}


def test_it_reports_zero_spend_when_there_is_none() -> None:
    assert snapshot_load(now=NOW).spend_usd == {"cheap": 0.0, "premium": 0.0}


def test_it_lists_uncurated_connection_kinds() -> None:
    Connection.objects.create(id="q1", provider="qwen", auth_type="oauth")
    Connection.objects.create(id="q2", provider="qwen", auth_type="oauth")
    Connection.objects.create(id="k1", provider="local", keyless=True)
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    Connection.objects.create(id="c2", provider="claude", auth_type="cookie")

    kinds = catalog_uncurated_kinds(snapshot=snapshot_load(now=NOW))

    assert kinds == [("claude", "cookie"), ("qwen", "oauth")]  # connection order: position, id


def test_it_reads_the_state_version() -> None:
    assert state_version_get() == 0


def test_it_reads_both_versions_in_one_query(django_assert_num_queries: DjangoAssertNumQueries) -> None:
    with django_assert_num_queries(1):
        assert state_versions_get() == (0, 0)


@pytest.mark.parametrize("count", [5, 50])
def test_it_reads_the_live_state_of_stamped_connections_in_one_query(
    count: int, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    make_connections(count)
    Connection.objects.create(id="bare", provider="claude", live_seq=8)  # no reading at all
    Connection.objects.filter(id__in=["c001", "c003"]).update(live_seq=8, cooldown_until=NOW)
    Connection.objects.filter(id="c002").update(live_seq=7)  # stamped before: already read

    with django_assert_num_queries(1):
        live = live_state_since(7)

    latest = readings_latest()
    assert live == {
        "bare": (None, None),
        "c001": (NOW, latest["c001"]),
        "c003": (NOW, latest["c003"]),
    }
    assert [w.name for w in latest["c001"].windows] == ["5h", "7d"]  # in the windows' order
