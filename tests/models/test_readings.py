from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from ladder.models import Connection, FailureEvent, QuotaReading, QuotaWindow

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


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
