"""A snapshot whose readings come from the hot state in Redis first (ladder.services.hotstate).

``snapshot_load_hot`` is ``selectors.snapshot_load`` with one difference: each connection's latest
reading is read from Redis, and from the database for whatever Redis lacks, or for everything when
Redis is down. The database remains the source of truth: Redis only ever holds copies of stored
readings, written after their transaction committed, never replacing a newer one.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from ladder import models as m
from ladder.domain.types import Snapshot
from ladder.selectors import (
    catalog_entries,
    configuration_get,
    connection_to_domain,
    model_entries,
    spend_usd,
)
from ladder.services.hotstate import readings_latest_hot


def snapshot_load_hot(*, now: datetime | None = None) -> Snapshot:
    now = now or timezone.now()
    config = configuration_get().to_domain()
    rows = list(m.Connection.objects.order_by("position", "id"))
    readings = readings_latest_hot(connection_ids=[row.id for row in rows])
    return Snapshot(
        config=config,
        billing_catalog=catalog_entries(),
        models=model_entries(),
        connections=tuple(connection_to_domain(row, readings.get(row.id), config=config) for row in rows),
        spend_usd=spend_usd(period=config.budget_period, now=now),
    )
