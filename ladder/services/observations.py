"""Passive observations reported by the gateway: an upstream reply's rate-limit headers, read by the
connection's adapter into a reading (source "headers") and stored like any reading."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from msgspec.structs import replace

from ladder import models as m
from ladder.domain.types import Reading, Window
from ladder.providers.registry import get_adapter
from ladder.selectors.snapshot import readings_latest
from ladder.services.readings import reading_record

logger = logging.getLogger(__name__)


def observation_record(
    *, connection_id: str, headers: Mapping[str, str], observed_at: datetime, now: datetime
) -> Reading | None:
    """The reading stored (latches computed), or None when the headers tell nothing the adapter knows.

    Connection.DoesNotExist for an unknown id; ValidationError (from reading_record) for an
    observation dated more than 300 s in the future."""
    connection = m.Connection.objects.get(pk=connection_id)
    adapter = get_adapter(connection.provider, connection.auth_type)
    if adapter is None:
        return None
    try:
        reading = adapter.read_headers(headers, observed_at)
    except Exception:  # an adapter must never turn a gateway report into a 500
        logger.exception("adapter %r failed to read the headers reported for %s", adapter, connection_id)
        return None
    if reading is None:
        return None
    latest = readings_latest(connection_ids=[connection_id]).get(connection_id)
    merged = reading_merge(latest, replace(reading, source="headers"))
    return reading_record(connection_id=connection_id, reading=merged, now=now).reading


def reading_merge(previous: Reading | None, headers: Reading) -> Reading:
    """A passive-header reading completed by the previous latest reading (fail closed).

    Headers tell about some windows only, and rarely about overage. The previous reading's other
    windows keep their values (remaining_pct, reset_at, scope_models, latched) unless their own
    reset has passed at the header reading's time; windows the headers carry replace same-name
    windows. observed_overage carries over unless the headers state one. The merged reading is
    verifiable only when both are. A previous reading newer than the headers is not merged in."""
    if previous is None or previous.fetched_at > headers.fetched_at:
        return headers
    carried_names = {w.name for w in headers.windows}
    kept: list[Window] = [
        w
        for w in previous.windows
        if w.name not in carried_names and (w.reset_at is None or w.reset_at > headers.fetched_at)
    ]
    overage = headers.observed_overage
    if overage is None or overage == "unknown":
        overage = previous.observed_overage if previous.observed_overage is not None else overage
    return replace(
        headers,
        windows=(*headers.windows, *kept),
        observed_overage=overage,
        verifiable=headers.verifiable and previous.verifiable,
    )
