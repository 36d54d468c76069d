from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ladder.models import (
    BillingCatalogEntry,
    Connection,
    EscalationEvent,
    LadderConfiguration,
    ModelCatalogEntry,
    QuotaReading,
    QuotaWindow,
    StateVersion,
    UsageEvent,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
SECRET = "sk-PLAINTEXT-never-shown-0123456789"


@pytest.fixture
def rows() -> dict[str, Any]:
    connection = Connection(id="claude.max:1", provider="claude", auth_type="oauth")
    connection.set_credential(SECRET)
    connection.save()
    reading = QuotaReading.objects.create(connection=connection, fetched_at=NOW)
    window = QuotaWindow.objects.create(reading=reading, name="5h", remaining_pct=42)
    event = UsageEvent.objects.create(
        request_id="req-1",
        connection=connection,
        budget_rung="cheap",
        cost_usd=Decimal("0.5"),
        occurred_at=NOW,
    )
    return {
        "connection": connection,
        "quotareading": reading,
        "quotawindow": window,
        "usageevent": event,
        "billingcatalogentry": BillingCatalogEntry.objects.get(provider="claude", auth_type="oauth"),
        "modelcatalogentry": ModelCatalogEntry.objects.get(provider="claude", model="claude-opus-4-1"),
        "ladderconfiguration": LadderConfiguration.load(),
        "stateversion": StateVersion.objects.get(pk=1),
        "escalationevent": EscalationEvent.objects.create(
            auto_id="auto/thrifty",
            from_rung=0,
            to_rung=3,
            kind="up",
            why="plan: quota_exhausted",
            occurred_at=NOW,
        ),
    }


def connection_form(**overrides: str) -> dict[str, str]:
    data = {
        "provider": "claude",
        "auth_type": "oauth",
        "enabled": "on",
        "disabled_reason": "",
        "position": "0",
        "models": "",
        "overage_override": "",
        "reserve_pct": "",
        "min_poll_interval_s": "",
        "base_url": "",
        "cooldown_until_0": "",
        "cooldown_until_1": "",
        "backoff_level": "0",
        "next_refresh_at_0": "",
        "next_refresh_at_1": "",
        "claimed_until_0": "",
        "claimed_until_1": "",
        "credential": "",
    }
    return {**data, **overrides}
