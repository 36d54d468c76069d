from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from ladder.models import Connection, UsageEvent

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


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
