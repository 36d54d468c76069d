"""The reads of every API request, written by hand (make bench-api): the ORM spends ~0.3 ms compiling
such a query, a prepared string ~0.02 ms. The strings name tables and columns from the models' metadata."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import connection as db_connection
from django.db import models
from django.utils import timezone

from ladder import models as m


def column_name(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return str(field.column)


def column(model: type[models.Model], name: str) -> str:
    return f'"{model._meta.db_table}"."{column_name(model, name)}"'


@cache
def hot_sql() -> dict[str, str]:
    token_fields = ", ".join(column(m.GatewayToken, f) for f in GATEWAY_TOKEN_FIELDS)
    return {
        "versions": f"SELECT {column(m.StateVersion, 'value')}, {column(m.StateVersion, 'live')} "
        f'FROM "{m.StateVersion._meta.db_table}" WHERE {column(m.StateVersion, "id")} = 1',
        "live": live_sql(),
        "spend": f"SELECT {column(m.RungSpend, 'rung')}, {column(m.RungSpend, 'spent_usd')} "
        f'FROM "{m.RungSpend._meta.db_table}" WHERE {column(m.RungSpend, "period")} = %s '
        f"AND {column(m.RungSpend, 'period_start')} = %s",
        "token": f'SELECT {token_fields} FROM "{m.GatewayToken._meta.db_table}" '
        f"WHERE {column(m.GatewayToken, 'token_hash')} = %s "
        f"AND {column(m.GatewayToken, 'revoked_at')} IS NULL",
    }


def sql_rows(name: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    with db_connection.cursor() as cursor:
        cursor.execute(hot_sql()[name], params)
        return cursor.fetchall()


GATEWAY_TOKEN_FIELDS = (
    "id",
    "name",
    "token_hash",
    "scope_resolve",
    "scope_report",
    "connection_ids",
    "spend_ceiling_usd",
    "scope_credentials",
    "last_used_at",
)  # ladder.selectors.tokens.GatewayTokenGrant's fields


# A reading's and a window's columns, in the order of the live query and of the snapshot's builders
# (ladder.selectors.snapshot.reading_of and window_of).
READING_COLUMNS = ("fetched_at", "source", "verifiable", "observed_overage", "note")
WINDOW_COLUMNS = ("name", "remaining_pct", "reset_at", "scope_models", "latched", "exhausts_at")


def aware(moment: datetime | None) -> datetime | None:
    if moment is None or timezone.is_aware(moment):
        return moment
    return timezone.make_aware(moment, UTC)


def table(model: type[models.Model]) -> str:
    return f'"{model._meta.db_table}"'


def live_sql() -> str:
    """Connections stamped after a live version, with their latest reading's windows: a row per
    window (one with NULLs for a connection without reading or without windows)."""
    c, r, w = m.Connection, m.QuotaReading, m.QuotaWindow
    col = column
    reading_id, connection_id, fetched_at = (
        f'"latest"."{column_name(r, f)}"' for f in ("id", "connection", "fetched_at")
    )
    inner = (
        f'SELECT {reading_id} FROM {table(r)} "latest" WHERE {connection_id} = {col(c, "id")} '
        f"ORDER BY {fetched_at} DESC, {reading_id} DESC LIMIT 1"
    )
    fields = ", ".join(
        [
            col(c, "id"),
            col(c, "cooldown_until"),
            col(r, "id"),
            *(col(r, name) for name in READING_COLUMNS),
            *(col(w, name) for name in WINDOW_COLUMNS),
        ]
    )
    return (
        f"SELECT {fields} FROM {table(c)} "
        f"LEFT JOIN {table(r)} ON {col(r, 'id')} = ({inner}) "
        f"LEFT JOIN {table(w)} ON {col(w, 'reading')} = {col(r, 'id')} "
        f"WHERE {col(c, 'live_seq')} > %s "
        f"ORDER BY {col(c, 'id')}, {col(w, 'position')}, {col(w, 'id')}"
    )


def json_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bytes):
        value = json.loads(value)
    return tuple(value or ())
