"""The gateway's credential calls (API.md: GET/PUT /api/v1/connections/{id}/credential): a
ladder-owned access token lent to the gateway (refreshed first when due), a gateway-owned one's new
token taken back, each call recorded (never the value) and rate-limited per gateway token."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any

import httpx
from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from ladder.domain.credentials import NEEDS_REAUTH
from ladder.domain.timefmt import format_utc_or_none
from ladder.models import Connection, CredentialAccess
from ladder.providers.credentials import Credential
from ladder.security.ratelimit import rate_limit_hit
from ladder.selectors.connections import credential_summary_of
from ladder.services.credential_refresh import IN_PROGRESS, NOT_RENEWED, REFUSED, credential_refresh
from ladder.services.credentials import CREDENTIAL_FIELDS, credential_apply
from ladder.services.state import bump_state_version
from ladder.services.upstream import upstream_client

logger = logging.getLogger(__name__)


@dataclass
class CredentialUnavailable(Exception):
    """Why the gateway gets no credential: an API status, a code, a message (never a token)."""

    status: int
    code: str
    message: str
    _: KW_ONLY
    field: str | None = None
    retry_after_s: int | None = None

    def __str__(self) -> str:
        return self.message


def credential_access_record(*, connection_id: str, token_name: str, action: str, outcome: str) -> None:
    """Who fetched or pushed which connection's credential, and when; never the value."""
    try:
        CredentialAccess.objects.create(
            connection_id=connection_id[:64],
            token_name=token_name[:100],
            action=action,
            outcome=outcome[:32],
            at=timezone.now(),
        )
    except OperationalError:
        logger.warning(
            "credential access of %s by %s not recorded (database busy)", connection_id, token_name
        )


def credential_rate_check(*, token_id: int, now: datetime) -> None:
    """At most LADDER_CREDENTIALS_RATE_PER_MIN fetches and pushes per gateway token and minute
    (ladder.security.ratelimit); 429 past it. Redis unavailable: not limited (logged)."""
    limit = int(settings.LADDER_CREDENTIALS_RATE_PER_MIN)
    if (wait_s := rate_limit_hit(key=f"credential:{token_id}", limit=limit)) is not None:
        raise CredentialUnavailable(
            429,
            "rate_limited",
            f"at most {limit} credential calls a minute per gateway token",
            retry_after_s=wait_s,
        )


def credential_for_gateway(
    *, connection_id: str, client: httpx.Client | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """A ladder-owned connection's access token for the gateway, refreshed first when it is within its
    lead time. Raises CredentialUnavailable (API.md's statuses and codes)."""
    now = now or timezone.now()
    row = _owned_row(connection_id, "ladder")
    if not row.credential_ciphertext:
        raise CredentialUnavailable(409, "no_credential", "no credential is stored for this connection")
    if row.disabled_reason == NEEDS_REAUTH:
        raise CredentialUnavailable(409, NEEDS_REAUTH, "the provider refused the refresh token: log in again")
    with contextlib.nullcontext(client) if client is not None else upstream_client() as http:
        outcome = credential_refresh(connection_id=connection_id, client=http, now=now).outcome
    row.refresh_from_db()
    if outcome == REFUSED or row.disabled_reason == NEEDS_REAUTH:
        raise CredentialUnavailable(409, NEEDS_REAUTH, "the provider refused the refresh token: log in again")
    still_valid = row.credential_expires_at is None or row.credential_expires_at > timezone.now()
    if outcome == IN_PROGRESS and not still_valid:
        raise CredentialUnavailable(
            503,
            "refresh_in_progress",
            "another process is refreshing this credential; retry shortly",
            retry_after_s=2,
        )
    if outcome in NOT_RENEWED and not still_valid:
        raise CredentialUnavailable(
            503,
            "refresh_failed",
            "the token endpoint did not renew the expired token; retry shortly",
            retry_after_s=30,
        )
    return {
        "access_token": row.get_credential(),
        "expires_at": format_utc_or_none(row.credential_expires_at),
        "account_id": row.credential_account_id or None,
    }


def _owned_row(connection_id: str, owner: str, *, lock: bool = False) -> Connection:
    rows = Connection.objects.select_for_update() if lock else Connection.objects
    row = rows.filter(pk=connection_id).first()
    if row is None:
        raise CredentialUnavailable(404, "connection_not_found", f"no connection {connection_id!r}")
    if row.credential_owner != owner:
        raise CredentialUnavailable(
            409,
            "credential_not_owned",
            f"the {owner} does not own this credential (owner {row.credential_owner})",
        )
    return row


def credential_push_for_gateway(
    *, connection_id: str, access_token: str, expires_at: datetime, account_id: str | None, now: datetime
) -> dict[str, Any]:
    """A gateway-owned connection's new access token (the gateway refreshed it); answers its summary.
    Clears ``auth_failed`` and ``needs_reauth``. CredentialUnavailable for an unknown connection (404)
    or one the gateway does not own (409)."""
    with transaction.atomic():
        row = _owned_row(connection_id, "gateway", lock=True)
        account = account_id if account_id is not None else row.credential_account_id or None
        credential = Credential(access_token=access_token, expires_at=expires_at, account_id=account)
        credential_apply(connection=row, credential=credential, owner="gateway", now=now)
        row.save(update_fields=CREDENTIAL_FIELDS)
        bump_state_version()
    summary = credential_summary_of(
        stored=bool(row.credential_ciphertext),
        owner=row.credential_owner,
        expires_at=row.credential_expires_at,
        account_id=row.credential_account_id,
    )
    return {"credential": summary}
