"""Passive observations reported by the gateway: an upstream reply's rate-limit headers, read by the
connection's adapter into a reading (source "headers") and stored like any reading."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from ladder import models as m
from ladder.domain.types import Reading
from ladder.providers.registry import get_adapter
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
    stored = reading_record(connection_id=connection_id, reading=replace(reading, source="headers"), now=now)
    return stored.reading
