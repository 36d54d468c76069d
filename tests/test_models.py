from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction
from pytest_django.fixtures import Settings as SettingsWrapper

from ladder.domain.types import LadderConfig
from ladder.models import (
    BillingCatalogEntry,
    Connection,
    FailureEvent,
    LadderConfiguration,
    ModelCatalogEntry,
    QuotaReading,
    QuotaWindow,
    UsageEvent,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def billing_row(
    provider: str = "acme", auth_type: str | None = None, **fields: object
) -> BillingCatalogEntry:
    values: dict[str, object] = {"billing": "subscription", "overage": "hard-stop", **fields}
    return BillingCatalogEntry(provider=provider, auth_type=auth_type, **values)


def test_it_refuses_a_second_provider_wide_row() -> None:
    billing_row().save()

    with pytest.raises(ValidationError, match="already has a provider-wide row"):
        billing_row().full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row().save()


def test_it_refuses_a_duplicate_after_auth_type_normalisation() -> None:
    billing_row(auth_type="oauth").save()

    with pytest.raises(ValidationError, match="provider and auth type already exists"):
        billing_row(auth_type="  OAuth ").full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row(auth_type=" OAUTH").save()


def test_it_allows_a_provider_wide_row_beside_auth_type_rows() -> None:
    billing_row().save()
    billing_row(auth_type="oauth").save()
    billing_row(auth_type="apikey").save()

    assert BillingCatalogEntry.objects.filter(provider="acme").count() == 3


def test_it_stores_an_empty_auth_type_as_provider_wide() -> None:
    row = billing_row(auth_type="   ")
    row.save()

    row.refresh_from_db()
    assert row.auth_type is None
    assert str(row) == "acme (provider-wide)"


def test_it_refuses_a_raw_write_of_a_non_normalised_auth_type() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        BillingCatalogEntry.objects.bulk_create([billing_row(auth_type="OAuth")])
    with pytest.raises(IntegrityError), transaction.atomic():
        BillingCatalogEntry.objects.bulk_create([billing_row(auth_type="")])


def test_it_refuses_an_unknown_billing_value() -> None:
    with pytest.raises(ValidationError, match="billing"):
        billing_row(billing="flat").full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        billing_row(billing="flat").save()


@pytest.mark.parametrize("bad_id", ["", "has space", "a/b", "x" * 65, "trailing\n", "é"])
def test_it_refuses_a_bad_connection_id_with_a_clear_message(bad_id: str) -> None:
    with pytest.raises(ValidationError) as error:
        Connection(id=bad_id, provider="claude").full_clean()

    messages = " ".join(error.value.message_dict["id"])
    assert "letter, a digit, '.', '_', ':' or '-'" in messages or "blank" in messages or "64" in messages


@pytest.mark.parametrize("bad_id", ["has space", "a/b", "trailing\n", "x" * 65])
def test_it_refuses_a_bad_connection_id_in_the_database(bad_id: str) -> None:
    # PostgreSQL refuses the 65-character id as too long for varchar(64) before the check runs.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Connection.objects.bulk_create([Connection(id=bad_id, provider="claude")])


@pytest.mark.parametrize("good_id", ["c1", "claude.max:team_1-a", "x" * 64])
def test_it_accepts_gateway_connection_ids(good_id: str) -> None:
    connection = Connection(id=good_id, provider="claude")
    connection.full_clean()
    connection.save()

    assert Connection.objects.filter(pk=good_id).exists()


def test_it_normalises_a_connection_auth_type() -> None:
    Connection.objects.create(id="c1", provider="claude", auth_type=" OAuth ")

    assert Connection.objects.get(pk="c1").auth_type == "oauth"


def test_it_refuses_a_models_value_that_is_not_a_list_of_ids() -> None:
    with pytest.raises(ValidationError, match="list of non-empty strings"):
        Connection(id="c1", provider="claude", models="claude-sonnet-4-5").full_clean()
    Connection(id="c2", provider="claude", models=["claude-sonnet-4-5"]).full_clean()
    Connection(id="c3", provider="claude", models=None).full_clean()


def test_it_refuses_remaining_pct_outside_0_to_100() -> None:
    connection = Connection.objects.create(id="c1", provider="claude")
    reading = QuotaReading.objects.create(connection=connection, fetched_at=NOW)

    with pytest.raises(ValidationError, match="100"):
        QuotaWindow(reading=reading, name="5h", remaining_pct=100.5).full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=100.5)
    with pytest.raises(IntegrityError), transaction.atomic():
        QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=-1)
    QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=100)
    QuotaWindow.objects.create(reading=reading, name="7d", remaining_pct=0)


def test_it_refuses_an_unknown_model_category() -> None:
    entry = ModelCatalogEntry(provider="acme", model="m1", categories=["coding", "poetry"])

    with pytest.raises(ValidationError, match="poetry"):
        entry.full_clean()


def test_it_refuses_a_duplicate_model_entry() -> None:
    ModelCatalogEntry.objects.create(provider="acme", model="m1")

    with pytest.raises(IntegrityError), transaction.atomic():
        ModelCatalogEntry.objects.create(provider="acme", model="m1")


def test_it_refuses_a_negative_price() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        ModelCatalogEntry.objects.create(provider="acme", model="m1", input_usd_per_mtok=Decimal("-0.1"))


def test_it_refuses_a_usage_rung_above_4() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        UsageEvent.objects.create(request_id="r1", rung=5, occurred_at=NOW)


def test_it_refuses_a_duplicate_usage_request_id() -> None:
    UsageEvent.objects.create(request_id="r1", occurred_at=NOW)

    with pytest.raises(IntegrityError), transaction.atomic():
        UsageEvent.objects.create(request_id="r1", occurred_at=NOW)


def test_it_keeps_spend_when_its_connection_is_deleted() -> None:
    connection = Connection.objects.create(id="c1", provider="openai")
    UsageEvent.objects.create(
        request_id="r1", connection=connection, budget_rung="cheap", cost_usd=Decimal("1.5"), occurred_at=NOW
    )

    connection.delete()

    event = UsageEvent.objects.get(request_id="r1")
    assert event.connection is None
    assert event.cost_usd == Decimal("1.5")


def test_it_creates_the_configuration_from_settings(settings: SettingsWrapper) -> None:
    settings.LADDER_DEFAULTS = {**settings.LADDER_DEFAULTS, "exit_cutoff_pct": 3.0, "budget_period": "day"}

    configuration = LadderConfiguration.load()

    assert configuration.pk == 1
    assert configuration.exit_cutoff_pct == 3.0
    assert configuration.budget_period == "day"
    assert configuration.rung_budget_usd == {}
    assert LadderConfiguration.load().pk == configuration.pk
    assert LadderConfiguration.objects.count() == 1


def test_it_keeps_a_single_configuration_row() -> None:
    LadderConfiguration.load()
    LadderConfiguration(exit_cutoff_pct=4.0).save()

    assert LadderConfiguration.objects.count() == 1
    assert LadderConfiguration.load().exit_cutoff_pct == 4.0


def test_it_reports_configuration_errors_per_field() -> None:
    configuration = LadderConfiguration.load()
    configuration.exit_cutoff_pct = 150.0
    configuration.max_reading_age_s = 0.0
    configuration.rung_budget_usd = {"cheap": -1, "gold": 5}

    with pytest.raises(ValidationError) as error:
        configuration.full_clean()

    errors = error.value.message_dict
    assert errors["exit_cutoff_pct"] == ["must be a number between 0 and 100"]
    assert errors["max_reading_age_s"] == ["must be a positive number"]
    assert any(message.startswith("cheap: must be a number ≥ 0") for message in errors["rung_budget_usd"])
    assert any("unknown rung 'gold'" in message for message in errors["rung_budget_usd"])


def test_it_allows_a_reentry_value_below_the_cutoff() -> None:
    configuration = LadderConfiguration.load()
    configuration.exit_cutoff_pct = 10.0
    configuration.reentry_min_remaining_pct = 1.0

    configuration.full_clean()
    assert configuration.to_domain().reentry_floor_pct == 10.0


def test_it_converts_the_configuration_to_the_domain() -> None:
    configuration = LadderConfiguration.load()
    configuration.rung_budget_usd = {"cheap": 5, "premium": 0}
    configuration.cheap_max_input_usd_per_mtok = 0.5

    config = configuration.to_domain()

    assert isinstance(config, LadderConfig)
    assert config.rung_budget_usd == {"cheap": 5.0, "premium": 0.0}
    assert config.cheap_max_input_usd_per_mtok == 0.5
    assert config.max_reading_age_s == 180.0


def test_it_keeps_an_empty_models_list_apart_from_every_model() -> None:
    # As in a state file: null serves every catalog model of the provider, [] none.
    connection = Connection(id="c1", provider="claude", models=[])
    connection.full_clean()
    connection.save()
    Connection.objects.create(id="c2", provider="claude", models=None)

    assert Connection.objects.get(pk="c1").models == []
    assert Connection.objects.get(pk="c2").models is None


def test_the_migration_scrubs_credentials_quoted_in_stored_failures() -> None:
    import importlib

    from django.apps import apps

    migration = importlib.import_module("ladder.migrations.0016_gateway_token_limits")
    key = "sk-proj-StoredBeforeTheFix-0123456789"
    connection = Connection(id="c1", provider="openai", auth_type="apikey", last_poll_error=f"401: {key}")
    connection.set_credential(key)
    connection.save()
    FailureEvent.objects.create(
        connection=connection,
        status=401,
        classification="auth_failed",
        detail=f"key ...{key[-12:]}",
        observed_at=NOW,
    )

    migration.scrub_quoted_credentials(apps, None)

    assert Connection.objects.get(pk="c1").last_poll_error == "401: [redacted]"
    assert FailureEvent.objects.get().detail == "key ...[redacted]"
