"""What readiness reads: whether the database answers, and when the refresh fan-out last ticked."""

from __future__ import annotations

from datetime import datetime

from django.db import connection as db_connection

from ladder import models as m

BEAT_HEARTBEAT = "beat"  # the Heartbeat row the refresh fan-out stamps (ladder.services.hotstate)


def database_ping() -> None:
    """Raises the database's error unless it answers a trivial query."""
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def beat_last_at() -> datetime | None:
    """When the refresh fan-out last ticked; None before its first tick."""
    return m.Heartbeat.objects.filter(pk=BEAT_HEARTBEAT).values_list("last_at", flat=True).first()
