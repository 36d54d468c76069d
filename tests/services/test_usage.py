from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection, connections

from ladder import models as m
from ladder.domain.types import Rung, Snapshot
from ladder.selectors.snapshot import snapshot_load, spend_usd
from ladder.services.usage import UsageConflict, UsageInput, UsageInvalid, usage_record
from tests.gateway.conftest import make_connection, set_config

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)


def usage(request_id: str = "r1", **fields: Any) -> UsageInput:
    values: dict[str, Any] = {
        "request_id": request_id,
        "connection_id": "key",
        "model": "gpt-5-mini",
        "input_tokens": 1_000_000,
        "output_tokens": 0,
        "occurred_at": NOW,
    }
    values.update(fields)
    return UsageInput(**values)


@pytest.fixture
def key() -> m.Connection:
    return make_connection("key", "openai", "apikey")


def test_it_prices_tokens_at_the_catalog_price_per_million(key: m.Connection) -> None:
    result = usage_record(events=[usage(input_tokens=123_456, output_tokens=7_890)], now=NOW)

    # 0.123456 × $0.25 + 0.00789 × $2 = 0.030864 + 0.01578
    assert result.events[0].cost_usd == Decimal("0.046644")
    assert result.events[0].rung == Rung.CHEAP
    assert result.budgets[Rung.CHEAP].spent_usd == pytest.approx(0.046644)


def test_it_counts_spend_in_the_budget_period_of_the_event(key: m.Connection) -> None:
    set_config(budget_period="day")
    usage_record(events=[usage("old", occurred_at=NOW - timedelta(days=1))], now=NOW)

    result = usage_record(events=[usage("new")], now=NOW)

    assert result.budgets[Rung.CHEAP].spent_usd == 0.25
    assert spend_usd(period="day", now=NOW - timedelta(days=1)) == {"cheap": 0.25, "premium": 0.0}
    assert spend_usd(period="month", now=NOW) == {"cheap": 0.5, "premium": 0.0}


def test_it_prices_a_plan_model_without_a_price_at_nothing(key: m.Connection) -> None:
    make_connection("cursor", "cursor", "cookie")

    result = usage_record(events=[usage(connection_id="cursor", model="auto")], now=NOW)

    assert result.events[0].rung == Rung.SUBSCRIPTION
    assert result.events[0].cost_usd == Decimal(0)


def test_it_refuses_to_guess_the_price_of_a_metered_model_without_one(key: m.Connection) -> None:
    m.ModelCatalogEntry.objects.create(provider="openai", model="gpt-mystery", input_usd_per_mtok=None)

    with pytest.raises(UsageInvalid) as error:
        usage_record(events=[usage(model="gpt-mystery")], now=NOW)

    assert error.value.field == "model"
    assert error.value.code == "unpriced_model"


def test_it_records_the_rung_of_the_pair_at_the_time_of_the_event(key: m.Connection) -> None:
    usage_record(events=[usage("r1", model="gpt-5")], now=NOW)

    row = m.UsageEvent.objects.get()
    assert (row.rung, row.budget_rung, row.connection_id, row.model) == (4, "premium", "key", "gpt-5")
    assert len(row.payload_hash) == 64


def test_it_replays_without_writing(key: m.Connection, django_assert_num_queries: Any) -> None:
    first = usage_record(events=[usage()], now=NOW)

    with django_assert_num_queries(1):  # the lookup: the budgets are the ones first answered
        again = usage_record(events=[usage()], now=NOW)

    assert again.events == first.events
    assert again.budgets == first.budgets
    assert m.UsageEvent.objects.count() == 1


def test_it_refuses_another_payload_under_a_known_request_id(key: m.Connection) -> None:
    usage_record(events=[usage()], now=NOW)

    with pytest.raises(UsageConflict) as error:
        usage_record(events=[usage(output_tokens=1)], now=NOW)

    assert error.value.field == "request_id"


def test_it_replays_when_it_loses_an_insert_race(key: m.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other report commits between our lookup and our insert: the unique constraint decides."""
    from ladder.services import usage as service

    real = service._price
    raced = {"done": False}

    def price_then_race(
        events: list[UsageInput], now: datetime, token: Any, inputs: Any
    ) -> list[m.UsageEvent]:
        rows = real(events, now, token, inputs)
        if not raced["done"]:
            raced["done"] = True
            m.UsageEvent.objects.create(
                request_id="r1",
                connection_id="key",
                model="gpt-5-mini",
                input_tokens=1_000_000,
                rung=3,
                budget_rung="cheap",
                cost_usd=Decimal("0.25"),
                occurred_at=NOW,
                payload_hash=usage().payload_hash,
            )
        return rows

    monkeypatch.setattr(service, "_price", price_then_race)

    result = usage_record(events=[usage()], now=NOW)

    assert [e.request_id for e in result.events] == ["r1"]
    assert m.UsageEvent.objects.count() == 1
    assert result.budgets[Rung.CHEAP].spent_usd == 0.25


def test_it_gives_up_after_repeated_races(key: m.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    from ladder.services import usage as service

    def always_race(events: list[UsageInput], now: datetime, token: Any, snapshot: Any) -> list[Any]:
        raise IntegrityError("duplicate key")

    monkeypatch.setattr(service, "_record_once", always_race)

    with pytest.raises(IntegrityError):
        usage_record(events=[usage()], now=NOW)


def test_it_prices_from_the_snapshot_given(key: m.Connection) -> None:
    snapshot = snapshot_load(now=NOW)
    m.ModelCatalogEntry.objects.filter(provider="openai", model="gpt-5-mini").update(input_usd_per_mtok=9)

    result = usage_record(events=[usage()], now=NOW, snapshot=snapshot)

    assert result.events[0].cost_usd == Decimal("0.25")  # the snapshot's price, not the row's


def test_it_takes_the_max_event_cost_from_the_snapshots_configuration(key: m.Connection) -> None:
    loaded = snapshot_load(now=NOW)
    snapshot = Snapshot(
        config=replace(loaded.config, max_event_cost_usd=0.1),
        billing_catalog=loaded.billing_catalog,
        models=loaded.models,
        connections=loaded.connections,
    )

    with pytest.raises(UsageInvalid) as error:
        usage_record(events=[usage()], now=NOW, snapshot=snapshot)

    assert error.value.code == "cost_too_large"
    assert not m.UsageEvent.objects.exists()


def test_it_reads_a_connection_the_snapshot_lacks_from_the_database(key: m.Connection) -> None:
    snapshot = snapshot_load(now=NOW)
    make_connection("late", "openai", "apikey", bump=False)

    result = usage_record(events=[usage("r1", connection_id="late"), usage("r2")], now=NOW, snapshot=snapshot)

    assert [(e.connection_id, e.rung, e.cost_usd) for e in result.events] == [
        ("late", Rung.CHEAP, Decimal("0.25")),
        ("key", Rung.CHEAP, Decimal("0.25")),
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writers need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_it_keeps_spend_exact_under_concurrent_reports() -> None:
    # A transactional test may start after another one flushed the seeded catalog: make sure of it.
    m.BillingCatalogEntry.objects.get_or_create(
        provider="openai", auth_type="apikey", defaults={"billing": "metered", "overage": "meters-to-paid"}
    )
    m.ModelCatalogEntry.objects.get_or_create(
        provider="openai", model="gpt-5-mini", defaults={"input_usd_per_mtok": Decimal("0.25")}
    )
    make_connection("key", "openai", "apikey")
    threads_count, per_thread = 8, 25
    barrier = threading.Barrier(threads_count)
    errors: list[BaseException] = []

    def report(worker: int) -> None:
        try:
            barrier.wait()
            for index in range(per_thread):
                own = usage(f"w{worker}-{index}", input_tokens=1_000_000, cost_usd=Decimal("0.01"))
                shared = usage(f"shared-{index}", cost_usd=Decimal("1.00"))  # every worker races on these
                usage_record(events=[own, shared], now=NOW)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=report, args=(n,)) for n in range(threads_count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)

    assert errors == []
    assert m.UsageEvent.objects.count() == threads_count * per_thread + per_thread
    expected = Decimal("0.01") * threads_count * per_thread + Decimal("1.00") * per_thread
    # Both counters of the events' period kinds, each summed by concurrent conditional updates.
    assert m.RungSpend.objects.get(period="day", rung="cheap").spent_usd == expected
    assert m.RungSpend.objects.get(period="month", rung="cheap").spent_usd == expected
