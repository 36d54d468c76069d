"""Keep a ladder-owned credential alive: redeem its refresh token before it expires (issue 17).

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
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
import stamina
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from ladder.domain.credentials import NEEDS_REAUTH, REFRESHABLE_KINDS, refresh_due
from ladder.models import Connection
from ladder.providers.credentials import Credential
from ladder.providers.tokens import RefreshFailed, RefreshRefused, redeem_refresh_token
from ladder.security.crypto import CredentialDecryptionError
from ladder.selectors.connections import connection_poll_floor
from ladder.services.credentials import connection_kind, credential_columns, lead_s, stored_credential
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
NO_REFRESH_TOKEN = "no_refresh_token"  # noqa: S105  (an outcome's name)
CAS_LOST = "cas_lost"
RENEWED = frozenset({REFRESHED, FRESH})  # the stored access token is a live one
NOT_RENEWED = frozenset({TRANSIENT, FAILED, CAS_LOST})  # tried, and it did not land
MAY_STILL_RENEW = frozenset({TRANSIENT, IN_PROGRESS, CAS_LOST})  # worth another try soon

REAUTH_MESSAGE = (
    "needs_reauth: the provider refused the refresh token ({why}). Log in again with the provider's "
    "CLI (a login of its own for the ladder) and paste the new credential file on this connection."
)


@dataclass(frozen=True)
class RefreshResult:
    outcome: str


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
    until = now + timedelta(seconds=float(settings.LADDER_CREDENTIAL_LEASE_S))
    owned = Connection.objects.filter(pk=connection_id, credential_owner="ladder").exclude(
        disabled_reason=NEEDS_REAUTH
    )
    won = owned.exclude(refresh_ciphertext="").filter(_claimable(now)).update(refresh_claimed_until=until)
    if won != 1:
        return _lost_claim(connection_id, wait_s=wait_s, force=force, stale=stale_access_token)
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


def _lost_claim(connection_id: str, *, wait_s: float | None, force: bool, stale: str | None) -> RefreshResult:
    """Someone else holds the refresh (or nothing can be refreshed): wait for the holder, re-read."""
    row = Connection.objects.filter(pk=connection_id).first()
    if row is None or row.credential_owner != "ladder":
        return RefreshResult(NOT_OWNED)
    if row.disabled_reason == NEEDS_REAUTH:
        return RefreshResult(REFUSED)
    if not row.refresh_ciphertext:
        return RefreshResult(NO_REFRESH_TOKEN)
    deadline = time.monotonic() + (float(settings.LADDER_CREDENTIAL_WAIT_S) if wait_s is None else wait_s)
    while row.refresh_claimed_until is not None and row.refresh_claimed_until >= timezone.now():
        if time.monotonic() >= deadline:
            return RefreshResult(IN_PROGRESS)
        time.sleep(0.02)
        row = Connection.objects.get(pk=connection_id)
    if row.disabled_reason == NEEDS_REAUTH:
        return RefreshResult(REFUSED)
    if _still_needed(row, now=timezone.now(), force=force, stale=stale):
        return RefreshResult(IN_PROGRESS)  # the other refresher did not renew it
    return RefreshResult(FRESH)


def _still_needed(row: Connection, *, now: datetime, force: bool, stale: str | None) -> bool:
    if force:
        if stale is None:
            return True
        try:
            return row.get_credential() == stale
        except CredentialDecryptionError:
            return True
    return _due(row, now)


def _due(row: Connection, now: datetime) -> bool:
    lead = lead_s(connection_kind(row))
    return refresh_due(
        expires_at=row.credential_expires_at, issued_at=row.credential_updated_at, lead_s=lead, now=now
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
        return RefreshResult(FRESH)
    kind = connection_kind(row)
    try:
        credential = stored_credential(row)
    except (CredentialDecryptionError, ImproperlyConfigured, ValueError) as exc:
        logger.error("credential refresh connection=%s: stored credential unusable: %s", connection_id, exc)
        return RefreshResult(FAILED)
    if credential is None or not credential.refresh_token or kind is None:
        return RefreshResult(NO_REFRESH_TOKEN)
    try:
        renewed = redeem_refresh_token(
            kind, credential, client, now, base_url=row.base_url, override=upstream_override(kind)
        )
    except RefreshRefused as exc:
        _mark_needs_reauth(connection_id, until=until, why=str(exc))
        return RefreshResult(REFUSED)
    except RefreshFailed as exc:
        outcome = TRANSIENT if exc.transient else FAILED
        logger.warning("credential refresh connection=%s outcome=%s: %s", connection_id, outcome, exc)
        return RefreshResult(outcome)
    return _write_back(row, renewed, until=until, now=timezone.now())


def _write_back(row: Connection, renewed: Credential, *, until: datetime, now: datetime) -> RefreshResult:
    updates = credential_columns(row, renewed, owner="ladder", now=now) | {"updated_at": now}
    cas = Connection.objects.filter(
        pk=row.pk, refresh_claimed_until=until, refresh_ciphertext=row.refresh_ciphertext
    )
    if _persist(lambda: cas.update(**updates)) != 1:
        # The lease ran out mid-refresh and someone else wrote: their token wins, ours is dropped.
        logger.error(
            "credential refresh connection=%s outcome=cas_lost: the rotated token was dropped", row.pk
        )
        return RefreshResult(CAS_LOST)
    logger.info(
        "credential refresh connection=%s outcome=refreshed expires_at=%s", row.pk, renewed.expires_at
    )
    return RefreshResult(REFRESHED)


def _persist(write: Callable[[], int]) -> int:
    """A write after a redemption: the rotated token exists only in this process now, so a briefly
    unavailable database (a lock, a failover) is retried for half the lease rather than losing it."""
    retrying = stamina.retry(
        on=OperationalError,
        attempts=None,
        timeout=float(settings.LADDER_CREDENTIAL_LEASE_S) / 2,
        wait_initial=0.01,
        wait_max=0.1,
        wait_jitter=0.01,
    )
    return retrying(write)()


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
    fields = ("id", "provider", "auth_type", "credential_expires_at", "credential_updated_at")
    return [row.id for row in rows.only(*fields) if _due(row, now)]


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
