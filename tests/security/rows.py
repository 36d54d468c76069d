"""One row of every ladder model, around one connection that holds a known credential."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from ladder import models as m
from ladder.services.state import bump_state_version
from ladder.services.tokens import gateway_token_create

# Distinctive enough that finding it anywhere (or its tail) can only mean a leak.
CREDENTIAL = "sk-ant-oat01-SECURITY-PROBE-7f3a9c2e51b04d8e9a6c"
CREDENTIAL_TAIL = "7f3a9c2e51b04d8e9a6c"
CONNECTION_ID = "claude.sec:1"


@dataclass
class Rows:
    connection: m.Connection
    token_value: str
    token: m.GatewayToken
    objects: dict[str, object]


def rows_create(*, base_url: str | None = None, connection_id: str = CONNECTION_ID) -> Rows:
    now = timezone.now()
    m.BillingCatalogEntry.objects.update_or_create(
        provider="claude", auth_type="oauth", defaults={"billing": "subscription", "overage": "hard-stop"}
    )
    connection = m.Connection(id=connection_id, provider="claude", auth_type="oauth", base_url=base_url)
    connection.set_credential(CREDENTIAL)
    connection.save()
    reading = m.QuotaReading.objects.create(connection=connection, fetched_at=now)
    window = m.QuotaWindow.objects.create(
        reading=reading, name="5h", remaining_pct=42, reset_at=now + timedelta(hours=3)
    )
    usage = m.UsageEvent.objects.create(
        request_id="req-sec-1", connection=connection, model="claude-sonnet-4-5", cost_usd=Decimal("0.5"),
        occurred_at=now,
    )  # fmt: skip
    failure = m.FailureEvent.objects.create(
        connection=connection, status=429, classification="quota_exhausted", window="5h", observed_at=now
    )
    token, token_value = gateway_token_create(name="security-probe")
    bump_state_version()
    objects: dict[str, object] = {
        "connection": connection,
        "quotareading": reading,
        "quotawindow": window,
        "usageevent": usage,
        "failureevent": failure,
        "gatewaytoken": token,
        "ladderconfiguration": m.LadderConfiguration.load(),
        "stateversion": m.StateVersion.objects.get(pk=1),
        "billingcatalogentry": m.BillingCatalogEntry.objects.get(provider="claude", auth_type="oauth"),
        "modelcatalogentry": m.ModelCatalogEntry.objects.order_by("pk").first(),
    }
    return Rows(connection=connection, token_value=token_value, token=token, objects=objects)
