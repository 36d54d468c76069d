"""Structured credentials: import a CLI's file, and keep a ladder-owned credential alive (issue 17).

One refresher per account. Claude's, Codex's and Kiro's refresh tokens are single use: a second
redemption of the same token fails and can revoke the whole family (steipete/CodexBar#1161,
openai/codex#6498). Every process (beat workers, the gateway API's web processes) therefore
redeems through ``credential_refresh``, which

1. claims the refresh with a conditional UPDATE carrying a lease
   (``refresh_claimed_until = now + lease WHERE refresh_claimed_until IS NULL OR < now``): one
   winner, and a dead claimer blocks no one past its lease (``select_for_update`` would do nothing
   on SQLite);
2. re-reads the row after the claim: a token another process refreshed meanwhile is not due any
   more, and is not redeemed again;
3. writes the rotated token back with a compare-and-set on the refresh token's ciphertext it read
   (a Fernet ciphertext is new at every write), and the claim;
4. a process that loses the claim waits for the holder (``LADDER_CREDENTIAL_WAIT_S``) and re-reads
   instead of redeeming.

A refused refresh token (``invalid_grant``, reused, revoked) disables the connection as
``needs_reauth``: someone must log in again. The last reading stays. Secrets never reach a log line,
an exception message or a page: messages name fields and outcomes only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from ladder.domain.credentials import (
    CREDENTIAL_OWNERS,
    NEEDS_REAUTH,
    REFRESHABLE_KINDS,
    ROTATING_KINDS,
    connection_kind,
    default_owner,
    refresh_due,
)
from ladder.models import Connection, CredentialAccess
from ladder.providers.credentials import Credential, CredentialFileError, parse_credential_file
from ladder.providers.tokens import RefreshFailed, RefreshRefused, redeem_refresh_token
from ladder.security.crypto import CredentialDecryptionError, decrypt_credential, encrypt_credential
from ladder.security.ratelimit import rate_limit_hit
from ladder.selectors.connections import connection_poll_floor, credential_summary_of
from ladder.services.state import bump_state_version
from ladder.services.upstream import upstream_client, upstream_override

logger = logging.getLogger(__name__)

# Outcomes of credential_refresh.
REFRESHED = "refreshed"
FRESH = "fresh"  # not due (or refreshed by someone else meanwhile): nothing redeemed
IN_PROGRESS = "in_progress"  # another process holds the claim
REFUSED = NEEDS_REAUTH
TRANSIENT = "transient"
FAILED = "failed"
NOT_OWNED = "not_owned"
NO_REFRESH_TOKEN = "no_refresh_token"
CAS_LOST = "cas_lost"
RENEWED = frozenset({REFRESHED, FRESH})  # the stored access token is a live one
NOT_RENEWED = frozenset({TRANSIENT, FAILED, CAS_LOST})  # tried, and it did not land
MAY_STILL_RENEW = frozenset({TRANSIENT, IN_PROGRESS, CAS_LOST})  # worth another try soon

REAUTH_MESSAGE = (
    "needs_reauth: the provider refused the refresh token ({why}). Log in again with the provider's "
    "CLI (a login of its own for the ladder) and paste the new credential file on this connection."
)
ROTATING_OWNER_HELP = (
    "A file that a running CLI keeps refreshing must not be handed to a second refresher: the two "
    "would log each other out. For the ladder to own it, log in once more for the ladder (a second "
    "login gets its own token family); to let the gateway own it, choose gateway."
)


def lead_s(kind: str | None) -> float:
    leads: dict[str, Any] = settings.LADDER_CREDENTIAL_LEAD_S or {}
    return float(leads.get(kind or "", 300)) * float(settings.LADDER_CREDENTIAL_LEAD_SCALE)


# --- storing ---------------------------------------------------------------------------------


def _refresh_blob(credential: Credential) -> str:
    if not credential.refresh_token:
        return ""
    plain = json.dumps({"refresh_token": credential.refresh_token, "params": dict(credential.refresh_params)})
    return encrypt_credential(plain)


def stored_credential(connection: Connection) -> Credential | None:
    """The connection's credential with its refresh token, decrypted; None without an access token."""
    access = connection.get_credential()
    if not access:
        return None
    refresh_token: str | None = None
    refresh_params: dict[str, str] = {}
    if connection.refresh_ciphertext:
        blob = json.loads(decrypt_credential(connection.refresh_ciphertext))
        refresh_token = blob.get("refresh_token") or None
        refresh_params = {str(k): str(v) for k, v in (blob.get("params") or {}).items()}
    params = connection.provider_params if isinstance(connection.provider_params, dict) else {}
    return Credential(
        access_token=access,
        refresh_token=refresh_token,
        expires_at=connection.credential_expires_at,
        account_id=connection.credential_account_id or None,
        params={str(k): str(v) for k, v in params.items() if v is not None},
        refresh_params=refresh_params,
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


def credential_apply(*, connection: Connection, credential: Credential, owner: str, now: datetime) -> None:
    """Put a parsed credential on an unsaved connection: the access token, the refresh token (kept
    only when the ladder owns it), expiry, account, the adapter's params. A new credential clears
    ``auth_failed`` and ``needs_reauth`` (DESIGN L7). The caller saves and bumps the state version.
    Raises ValidationError (field ``credential_owner``) for an owner that cannot hold it."""
    kind = connection_kind(connection)
    problem = credential_owner_problem(kind, owner, credential)
    if problem:
        raise ValidationError({"credential_owner": problem})
    connection.set_credential(credential.access_token)
    connection.refresh_ciphertext = _refresh_blob(credential) if owner == "ladder" else ""
    connection.credential_owner = owner
    connection.credential_expires_at = credential.expires_at
    connection.credential_account_id = (credential.account_id or "")[:200]
    connection.credential_updated_at = now
    connection.refresh_claimed_until = None
    params = dict(connection.provider_params) if isinstance(connection.provider_params, dict) else {}
    connection.provider_params = params | dict(credential.params)
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


def credential_push(
    *, connection_id: str, access_token: str, expires_at: datetime, account_id: str | None, now: datetime
) -> Connection:
    """A gateway-owned connection's new access token (the gateway refreshed it). Clears
    ``auth_failed`` and ``needs_reauth``. ValidationError for a connection the gateway does not own."""
    with transaction.atomic():
        connection = Connection.objects.select_for_update().get(pk=connection_id)
        if connection.credential_owner != "gateway":
            raise ValidationError({"credential_owner": "the gateway does not own this credential"})
        account = account_id if account_id is not None else connection.credential_account_id or None
        credential = Credential(access_token=access_token, expires_at=expires_at, account_id=account)
        credential_apply(connection=connection, credential=credential, owner="gateway", now=now)
        connection.save(update_fields=CREDENTIAL_FIELDS)
        bump_state_version()
    return connection


# --- refreshing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshResult:
    outcome: str
    expires_at: datetime | None = None
    detail: str = ""


def _claimable(now: datetime) -> Q:
    return Q(refresh_claimed_until__isnull=True) | Q(refresh_claimed_until__lt=now)


def credential_refresh(
    *,
    connection_id: str,
    client: httpx.Client,
    now: datetime | None = None,
    force: bool = False,
    stale_access_token: str | None = None,
    wait_s: float | None = None,
) -> RefreshResult:
    """Redeem a ladder-owned connection's refresh token if it is due (or ``force``: a 401 said the
    access token is dead; with ``stale_access_token``, only while that is still the stored one).
    Never raises for an upstream fault; see the module docstring for the protocol."""
    now = now or timezone.now()
    lease = timedelta(seconds=float(settings.LADDER_CREDENTIAL_LEASE_S))
    until = now + lease
    owned = Connection.objects.filter(pk=connection_id, credential_owner="ladder").exclude(
        disabled_reason=NEEDS_REAUTH
    )
    won = owned.exclude(refresh_ciphertext="").filter(_claimable(now)).update(refresh_claimed_until=until)
    if won != 1:
        return _lost_claim(connection_id, now=now, wait_s=wait_s, force=force, stale=stale_access_token)
    try:
        return _refresh_claimed(
            connection_id, client=client, now=now, until=until, force=force, stale=stale_access_token
        )
    finally:
        # Whatever happened, the claim goes (a write-back already cleared it: this is then a no-op).
        # If the database refuses even this, the lease lapses on its own.
        with contextlib.suppress(OperationalError):
            Connection.objects.filter(pk=connection_id, refresh_claimed_until=until).update(
                refresh_claimed_until=None
            )


def _lost_claim(
    connection_id: str, *, now: datetime, wait_s: float | None, force: bool, stale: str | None
) -> RefreshResult:
    """Someone else holds the refresh (or nothing can be refreshed): wait for the holder, re-read."""
    row = Connection.objects.filter(pk=connection_id).first()
    if row is None or row.credential_owner != "ladder":
        return RefreshResult(NOT_OWNED)
    if row.disabled_reason == NEEDS_REAUTH:
        return RefreshResult(REFUSED, row.credential_expires_at)
    if not row.refresh_ciphertext:
        return RefreshResult(NO_REFRESH_TOKEN, row.credential_expires_at)
    deadline = time.monotonic() + (float(settings.LADDER_CREDENTIAL_WAIT_S) if wait_s is None else wait_s)
    while True:
        held = row.refresh_claimed_until is not None and row.refresh_claimed_until >= timezone.now()
        if not held:
            break
        if time.monotonic() >= deadline:
            return RefreshResult(IN_PROGRESS, row.credential_expires_at)
        time.sleep(0.02)
        row = Connection.objects.get(pk=connection_id)
    if row.disabled_reason == NEEDS_REAUTH:
        return RefreshResult(REFUSED, row.credential_expires_at)
    if _still_needed(row, now=timezone.now(), force=force, stale=stale):
        return RefreshResult(IN_PROGRESS, row.credential_expires_at, "the other refresher did not renew it")
    return RefreshResult(FRESH, row.credential_expires_at)


def _still_needed(row: Connection, *, now: datetime, force: bool, stale: str | None) -> bool:
    if force:
        if stale is None:
            return True
        try:
            return row.get_credential() == stale
        except CredentialDecryptionError:
            return True
    return refresh_due(
        expires_at=row.credential_expires_at,
        issued_at=row.credential_updated_at,
        lead_s=lead_s(connection_kind(row)),
        now=now,
    )


def _refresh_claimed(
    connection_id: str,
    *,
    client: httpx.Client,
    now: datetime,
    until: datetime,
    force: bool,
    stale: str | None,
) -> RefreshResult:
    row = Connection.objects.get(pk=connection_id, refresh_claimed_until=until)  # re-read after the claim
    if not _still_needed(row, now=now, force=force, stale=stale):
        return RefreshResult(FRESH, row.credential_expires_at)
    kind = connection_kind(row)
    try:
        credential = stored_credential(row)
    except (CredentialDecryptionError, ImproperlyConfigured, ValueError) as exc:
        logger.error("credential refresh connection=%s: stored credential unusable: %s", connection_id, exc)
        return RefreshResult(FAILED, row.credential_expires_at, "stored credential unusable")
    if credential is None or not credential.refresh_token or kind is None:
        return RefreshResult(NO_REFRESH_TOKEN, row.credential_expires_at)
    try:
        renewed = redeem_refresh_token(
            kind, credential, client, now, base_url=row.base_url, override=upstream_override(kind)
        )
    except RefreshRefused as exc:
        _mark_needs_reauth(connection_id, until=until, why=str(exc))
        return RefreshResult(REFUSED, row.credential_expires_at, str(exc))
    except RefreshFailed as exc:
        outcome = TRANSIENT if exc.transient else FAILED
        logger.warning("credential refresh connection=%s outcome=%s: %s", connection_id, outcome, exc)
        return RefreshResult(outcome, row.credential_expires_at, str(exc))
    return _write_back(row, renewed, until=until, now=timezone.now())


def _write_back(row: Connection, renewed: Credential, *, until: datetime, now: datetime) -> RefreshResult:
    params = dict(row.provider_params) if isinstance(row.provider_params, dict) else {}
    updates: dict[str, Any] = {
        "credential_ciphertext": encrypt_credential(renewed.access_token),
        "refresh_ciphertext": _refresh_blob(renewed),
        "credential_expires_at": renewed.expires_at,
        "credential_account_id": (renewed.account_id or "")[:200],
        "credential_updated_at": now,
        "provider_params": params | dict(renewed.params),
        "refresh_claimed_until": None,
        "updated_at": now,
    }
    cas = Connection.objects.filter(
        pk=row.pk, refresh_claimed_until=until, refresh_ciphertext=row.refresh_ciphertext
    )
    written = _persist(lambda: cas.update(**updates))
    if written != 1:
        # The lease ran out mid-refresh and someone else wrote: their token wins, ours is dropped.
        logger.error(
            "credential refresh connection=%s outcome=cas_lost: the rotated token was dropped", row.pk
        )
        return RefreshResult(CAS_LOST, row.credential_expires_at)
    logger.info(
        "credential refresh connection=%s outcome=refreshed expires_at=%s", row.pk, renewed.expires_at
    )
    return RefreshResult(REFRESHED, renewed.expires_at)


def _persist(write: Callable[[], int]) -> int:
    """A write after a redemption: the rotated token exists only in this process now, so a briefly
    unavailable database (a lock, a failover) is retried for a while rather than losing it."""
    deadline = time.monotonic() + float(settings.LADDER_CREDENTIAL_LEASE_S) / 2
    while True:
        try:
            return write()
        except OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _mark_needs_reauth(connection_id: str, *, until: datetime, why: str) -> None:
    message = REAUTH_MESSAGE.format(why=why or "refused")

    def disable() -> int:
        with transaction.atomic():
            changed = Connection.objects.filter(pk=connection_id, refresh_claimed_until=until).update(
                enabled=False,
                disabled_reason=NEEDS_REAUTH,
                refresh_claimed_until=None,
                next_refresh_at=None,
                last_poll_error=message[:2000],
            )
            if changed:
                bump_state_version()
            return changed

    _persist(disable)
    logger.error("credential refresh connection=%s outcome=needs_reauth: %s", connection_id, why)


# --- a 401 that a gateway reports ------------------------------------------------------------


def credential_refresh_after_401(*, connection: Connection, now: datetime) -> bool:
    """DESIGN L7 as amended, for a 401 that a gateway reports on a credential the ladder owns: one
    refresh and a verifying poll, recorded in the database rather than only queued (a queued poll
    can be dropped: Redis down, the poll floor, a lost task).

    - The access token the report met is marked expired (``credential_expires_at = now``, a
      conditional UPDATE that holds only while that token is still the stored one), so the credential
      beat redeems the refresh token once, under its usual claim and compare-and-set.
    - The next poll is brought forward to the earliest the poll floor allows (never past a poll
      backed off after the usage endpoint's own 429): the verifying poll. Only a second 401 there,
      after the refresh, or a refused refresh token disables the connection.

    Bounded: while the credential is already marked, or within ``LADDER_CREDENTIAL_401_COOLDOWN_S``
    of its last renewal (the report is about the token before it), a repeated 401 schedules nothing.
    Returns whether this report scheduled the refresh (the caller then also queues the poll)."""
    cooldown = timedelta(seconds=float(settings.LADDER_CREDENTIAL_401_COOLDOWN_S))
    renewed = connection.credential_updated_at
    if renewed is not None and renewed > now - cooldown:
        return False
    marked = (
        Connection.objects.filter(
            pk=connection.pk,
            credential_owner="ladder",
            credential_ciphertext=connection.credential_ciphertext,
        )
        .exclude(refresh_ciphertext="")
        .exclude(disabled_reason=NEEDS_REAUTH)
        .filter(Q(credential_expires_at__isnull=True) | Q(credential_expires_at__gt=now))
        .update(credential_expires_at=now)
    )
    if not marked:
        return False
    floor = connection_poll_floor(connection_id=connection.pk, now=now)
    poll_at = floor[0] if floor is not None else now
    Connection.objects.filter(pk=connection.pk, poll_backoff_level=0).filter(
        Q(next_refresh_at__isnull=True) | Q(next_refresh_at__gt=poll_at)
    ).update(next_refresh_at=poll_at)
    logger.info("credential connection=%s: a reported 401 marked it for one refresh", connection.pk)
    return True


# --- the beat's sweep ------------------------------------------------------------------------


def credentials_due(*, now: datetime) -> list[str]:
    """Ids of ladder-owned credentials within their kind's lead time of expiry, soonest first."""
    horizon = now + timedelta(seconds=max([lead_s(kind) for kind in REFRESHABLE_KINDS], default=0))
    rows = (
        Connection.objects.filter(
            credential_owner="ladder", credential_expires_at__isnull=False, credential_expires_at__lte=horizon
        )
        .exclude(refresh_ciphertext="")
        .exclude(disabled_reason=NEEDS_REAUTH)
        .filter(_claimable(now))
        .order_by("credential_expires_at")
    )
    due: list[str] = []
    for row in rows.only("id", "provider", "auth_type", "credential_expires_at", "credential_updated_at"):
        if refresh_due(
            expires_at=row.credential_expires_at,
            issued_at=row.credential_updated_at,
            lead_s=lead_s(connection_kind(row)),
            now=now,
        ):
            due.append(row.id)
    return due


def credentials_refresh_due_run(*, client: httpx.Client | None = None) -> Counter[str]:
    """Refresh every ladder-owned credential that is due (the beat entry). Returns outcome counts."""
    counts: Counter[str] = Counter()
    ids = credentials_due(now=timezone.now())
    if not ids:
        return counts
    with contextlib.nullcontext(client) if client is not None else upstream_client() as http:
        for cid in ids:
            try:
                counts[credential_refresh(connection_id=cid, client=http, wait_s=0).outcome] += 1
            except OperationalError as exc:  # one connection's database trouble never stops the sweep
                logger.warning("credential refresh connection=%s: database unavailable: %s", cid, exc)
                counts["database_error"] += 1
    if counts:
        logger.info("credential sweep: %s", dict(counts))
    return counts


# --- the gateway's side (API.md: GET/PUT /api/v1/connections/{id}/credential) ----------------


class CredentialUnavailable(Exception):
    """Why the gateway gets no credential: an API status, a code, a message (never a token)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after_s = retry_after_s


def credential_summary(row: Connection) -> dict[str, Any] | None:
    """What the API may say about a credential: owner, expiry, account; None without one."""
    return credential_summary_of(
        stored=bool(row.credential_ciphertext),
        owner=row.credential_owner,
        expires_at=row.credential_expires_at,
        account_id=row.credential_account_id,
    )


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
    wait_s = rate_limit_hit(key=f"credential:{token_id}", limit=limit)
    if wait_s is not None:
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
    row = Connection.objects.filter(pk=connection_id).first()
    if row is None:
        raise CredentialUnavailable(404, "connection_not_found", f"no connection {connection_id!r}")
    _check_gettable(row)
    with contextlib.nullcontext(client) if client is not None else upstream_client() as http:
        result = credential_refresh(connection_id=connection_id, client=http, now=now)
    row.refresh_from_db()
    if result.outcome == REFUSED or row.disabled_reason == NEEDS_REAUTH:
        raise CredentialUnavailable(409, NEEDS_REAUTH, "the provider refused the refresh token: log in again")
    still_valid = row.credential_expires_at is None or row.credential_expires_at > timezone.now()
    if result.outcome == IN_PROGRESS and not still_valid:
        raise CredentialUnavailable(
            503,
            "refresh_in_progress",
            "another process is refreshing this credential; retry shortly",
            retry_after_s=2,
        )
    if result.outcome in NOT_RENEWED and not still_valid:
        raise CredentialUnavailable(
            503,
            "refresh_failed",
            "the token endpoint did not renew the expired token; retry shortly",
            retry_after_s=30,
        )
    summary = credential_summary(row) or {}
    return {
        "access_token": row.get_credential(),
        "expires_at": summary.get("expires_at"),
        "account_id": summary.get("account_id"),
    }


def _check_gettable(row: Connection) -> None:
    if row.credential_owner != "ladder":
        raise CredentialUnavailable(
            409,
            "credential_not_owned",
            f"the ladder does not own this credential (owner {row.credential_owner})",
        )
    if not row.credential_ciphertext:
        raise CredentialUnavailable(409, "no_credential", "no credential is stored for this connection")
    if row.disabled_reason == NEEDS_REAUTH:
        raise CredentialUnavailable(409, NEEDS_REAUTH, "the provider refused the refresh token: log in again")


def credential_push_for_gateway(
    *, connection_id: str, access_token: str, expires_at: datetime, account_id: str | None, now: datetime
) -> dict[str, Any]:
    """A gateway-owned connection's new access token; answers its summary. CredentialUnavailable for an
    unknown connection (404) or one the gateway does not own (409)."""
    row = Connection.objects.filter(pk=connection_id).first()
    if row is None:
        raise CredentialUnavailable(404, "connection_not_found", f"no connection {connection_id!r}")
    if row.credential_owner != "gateway":
        raise CredentialUnavailable(
            409,
            "credential_not_owned",
            f"the gateway does not own this credential (owner {row.credential_owner})",
        )
    stored = credential_push(
        connection_id=connection_id,
        access_token=access_token,
        expires_at=expires_at,
        account_id=account_id,
        now=now,
    )
    return {"credential": credential_summary(stored)}
