"""A connection's poll floor and credential summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from ladder import models as m
from ladder.domain.timefmt import format_utc
from ladder.domain.windows import poll_floor_s, provider_poll_floor_s


def connection_poll_floor_s(provider: str, min_poll_interval_s: float | None) -> float | None:
    """The least time between two polls of a connection: the slower of the operator's minimum
    interval and its adapter's floor (DESIGN L5); None when neither holds polls back. The adapter's
    floor comes from ladder.domain's table, as settings override it (``LADDER_POLL_FLOOR_S``): read
    here, where the adapters may not be imported."""
    return poll_floor_s(min_poll_interval_s, provider_poll_floor_s(provider, settings.LADDER_POLL_FLOOR_S))


def connection_poll_floor(*, connection_id: str, now: datetime) -> tuple[datetime, float] | None:
    """When the connection's poll floor (the operator's minimum interval or its adapter's floor) next
    allows a poll, and that floor, while it holds polls back (DESIGN L5); None when a poll may happen now."""
    row = (
        m.Connection.objects.filter(pk=connection_id)
        .values_list("last_polled_at", "min_poll_interval_s", "provider")
        .first()
    )
    if row is None or row[0] is None:
        return None
    floor_s = connection_poll_floor_s(row[2], row[1])
    if floor_s is None:
        return None
    allowed_at = row[0] + timedelta(seconds=floor_s)
    return (allowed_at, floor_s) if allowed_at > now else None


def credential_summary_of(
    *, stored: bool, owner: str, expires_at: datetime | None, account_id: str
) -> dict[str, Any] | None:
    """What the API says about a connection's credential (API.md): owner, expiry, account; never a
    token. None when no credential is stored."""
    if not stored:
        return None
    return {
        "owner": owner,
        "expires_at": format_utc(expires_at) if expires_at is not None else None,
        "account_id": account_id or None,
    }


def credential_summaries(*, connection_ids: Sequence[str] | None = None) -> dict[str, dict[str, Any] | None]:
    """Each connection's credential summary, in one query (the API's connections answer)."""
    rows = m.Connection.objects.all()
    if connection_ids is not None:
        rows = rows.filter(pk__in=list(connection_ids))
    fields = (
        "id",
        "credential_ciphertext",
        "credential_owner",
        "credential_expires_at",
        "credential_account_id",
    )
    return {
        cid: credential_summary_of(
            stored=bool(ciphertext), owner=owner, expires_at=expires, account_id=account
        )
        for cid, ciphertext, owner, expires, account in rows.values_list(*fields)
    }


def connection_exists(*, connection_id: str) -> bool:
    return m.Connection.objects.filter(pk=connection_id).exists()


@dataclass(frozen=True)
class ConnectionDetails:
    """What a connection's page shows beyond the snapshot: its polls, and its credential's owner,
    expiry and account (never the secret)."""

    last_poll_error: str
    last_polled_at: datetime | None
    next_refresh_at: datetime | None
    credential_stored: bool
    credential_owner: str
    credential_expires_at: datetime | None
    credential_account_id: str


def connection_details(*, connection_id: str) -> ConnectionDetails | None:
    fields = ("last_poll_error", "last_polled_at", "next_refresh_at", "credential_ciphertext")
    credential = ("credential_owner", "credential_expires_at", "credential_account_id")
    row = m.Connection.objects.filter(pk=connection_id).values_list(*fields, *credential).first()
    if row is None:
        return None
    error, polled_at, next_at, ciphertext, *rest = row
    return ConnectionDetails(error, polled_at, next_at, bool(ciphertext), *rest)
