"""Structured credentials: import a CLI's file and store it on its connection (encrypted; the refresh
token only when the ladder owns it). Keeping a ladder-owned credential alive is
``ladder.services.credential_refresh``; the gateway's credential calls (a gateway-owned one's renewed
token stored the same way) are ``ladder.services.gateway_credentials``. Secrets never reach a log
line, an exception message or a page: messages name fields and outcomes only.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ladder.domain.credentials import (
    CREDENTIAL_OWNERS,
    NEEDS_REAUTH,
    REFRESHABLE_KINDS,
    ROTATING_KINDS,
    connection_kind,
    default_owner,
)
from ladder.models import Connection
from ladder.providers.credentials import Credential, CredentialFileError, parse_credential_file
from ladder.security.crypto import decrypt_credential, encrypt_credential
from ladder.services.state import bump_state_version

logger = logging.getLogger(__name__)

ROTATING_OWNER_HELP = (
    "A file that a running CLI keeps refreshing must not be handed to a second refresher: the two "
    "would log each other out. For the ladder to own it, log in once more for the ladder (a second "
    "login gets its own token family); to let the gateway own it, choose gateway."
)


def lead_s(kind: str | None) -> float:
    leads: dict[str, Any] = settings.LADDER_CREDENTIAL_LEAD_S or {}
    return float(leads.get(kind or "", 300)) * float(settings.LADDER_CREDENTIAL_LEAD_SCALE)


def refresh_blob(credential: Credential) -> str:
    if not credential.refresh_token:
        return ""
    plain = json.dumps({"refresh_token": credential.refresh_token, "params": dict(credential.refresh_params)})
    return encrypt_credential(plain)


def stored_credential(connection: Connection) -> Credential | None:
    """The connection's credential with its refresh token, decrypted; None without an access token."""
    access = connection.get_credential()
    if not access:
        return None
    sealed = connection.refresh_ciphertext  # the refresh token and its params, when the ladder owns it
    blob = json.loads(decrypt_credential(sealed)) if sealed else {}
    params = connection.provider_params if isinstance(connection.provider_params, dict) else {}
    return Credential(
        access_token=access,
        refresh_token=blob.get("refresh_token") or None,
        expires_at=connection.credential_expires_at,
        account_id=connection.credential_account_id or None,
        params={str(k): str(v) for k, v in params.items() if v is not None},
        refresh_params={str(k): str(v) for k, v in (blob.get("params") or {}).items()},
    )


def credential_owner_problem(kind: str | None, owner: str | None, credential: Credential) -> str | None:
    """Why this owner cannot hold this credential (None: it can)."""
    if owner not in CREDENTIAL_OWNERS:
        if owner in (None, "") and kind in ROTATING_KINDS:
            return f"Choose who refreshes this {kind} credential: ladder or gateway. {ROTATING_OWNER_HELP}"
        return f"Choose an owner: {', '.join(CREDENTIAL_OWNERS)}."
    if owner == "ladder":
        if kind not in REFRESHABLE_KINDS:
            return (
                f"The ladder cannot refresh a {kind or 'this kind of'} credential; choose static or gateway."
            )
        if not credential.refresh_token:
            return "The ladder can own this credential only with its refresh token; the file has none."
    return None


def credential_columns(
    connection: Connection, credential: Credential, *, owner: str, now: datetime
) -> dict[str, Any]:
    """The columns that hold a credential on its connection: the access token, the refresh token
    (kept only when the ladder owns it), expiry, account, the adapter's params added to the row's."""
    params = dict(connection.provider_params) if isinstance(connection.provider_params, dict) else {}
    return {
        "credential_ciphertext": encrypt_credential(credential.access_token),
        "refresh_ciphertext": refresh_blob(credential) if owner == "ladder" else "",
        "credential_owner": owner,
        "credential_expires_at": credential.expires_at,
        "credential_account_id": (credential.account_id or "")[:200],
        "credential_updated_at": now,
        "refresh_claimed_until": None,
        "provider_params": params | dict(credential.params),
    }


def credential_apply(*, connection: Connection, credential: Credential, owner: str, now: datetime) -> None:
    """Put a parsed credential on an unsaved connection: the access token, the refresh token (kept
    only when the ladder owns it), expiry, account, the adapter's params. A new credential clears
    ``auth_failed`` and ``needs_reauth`` (DESIGN L7). The caller saves and bumps the state version.
    Raises ValidationError (field ``credential_owner``) for an owner that cannot hold it."""
    if problem := credential_owner_problem(connection_kind(connection), owner, credential):
        raise ValidationError({"credential_owner": problem})
    for name, value in credential_columns(connection, credential, owner=owner, now=now).items():
        setattr(connection, name, value)
    if connection.disabled_reason in ("auth_failed", NEEDS_REAUTH):
        connection.enabled = True
        connection.disabled_reason = None
    connection.next_refresh_at = None  # poll with the new credential soon


CREDENTIAL_FIELDS = [
    "credential_ciphertext",
    "refresh_ciphertext",
    "credential_owner",
    "credential_expires_at",
    "credential_account_id",
    "credential_updated_at",
    "refresh_claimed_until",
    "provider_params",
    "enabled",
    "disabled_reason",
    "next_refresh_at",
    "updated_at",
]


def credential_import(
    *, connection_id: str, text: str, owner: str | None, now: datetime | None = None
) -> Connection:
    """Store what the connection's CLI wrote (``~/.claude/.credentials.json`` …). ``owner`` None
    takes the kind's default (the rotating kinds have none: ValidationError). Raises ValidationError
    naming the field (``credential_file``: ``claudeAiOauth.expiresAt: expected …``); nothing is
    saved then."""
    now = now or timezone.now()
    with transaction.atomic():
        connection = Connection.objects.select_for_update().get(pk=connection_id)
        kind = connection_kind(connection)
        try:
            credential = parse_credential_file(kind or "", text, now=now)
        except CredentialFileError as exc:
            raise ValidationError({"credential_file": str(exc)}) from None
        credential_apply(
            connection=connection, credential=credential, owner=owner or default_owner(kind) or "", now=now
        )
        connection.save(update_fields=CREDENTIAL_FIELDS)
        bump_state_version()
    logger.info("credential imported connection=%s owner=%s", connection_id, connection.credential_owner)
    return connection
