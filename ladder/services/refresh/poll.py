"""One poll: what a claimed connection needs (read in one query), its quota endpoint fetched without
touching the database, and DESIGN L7 as amended for a 401 on a credential that the ladder owns."""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx
import msgspec
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from ladder.domain.types import Failure, Reading
from ladder.models import Connection
from ladder.providers import ConnectionRef, FetchError, ProviderAdapter, get_adapter
from ladder.security.crypto import CredentialDecryptionError
from ladder.security.logredact import strip_secrets
from ladder.selectors.connections import connection_poll_floor_s
from ladder.services.credential_refresh import MAY_STILL_RENEW, REFUSED, RENEWED, credential_refresh
from ladder.services.refresh.claim import CLAIM_CHUNK
from ladder.services.upstream import upstream_client, upstream_override

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefreshJob:
    connection_id: str
    provider: str
    poll_backoff_level: int
    adapter: ProviderAdapter | None = None
    # The poll floor: the operator's minimum interval or the adapter's, the slower (DESIGN L5).
    min_poll_interval_s: float | None = None
    ref: ConnectionRef | None = None
    skip_reason: str = ""
    credential_owner: str = "static"


@dataclass(frozen=True)
class Outcome:
    job: RefreshJob
    fetched_at: datetime
    reading: Reading | None = None
    error: FetchError | None = None
    crash: str = ""
    duration_s: float | None = None  # the HTTP exchange (None: nothing was fetched)
    needs_reauth: bool = False  # a 401, then the refresh token itself was refused


def jobs_load(connection_ids: Sequence[str], *, claim_until: datetime) -> list[RefreshJob]:
    """What each claimed connection needs to be polled, read in one query (credentials decrypted).
    Connections whose claim is not ``claim_until`` are left out: someone else holds them."""
    rows = {
        row.id: row
        for start in range(0, len(connection_ids), CLAIM_CHUNK)
        for row in Connection.objects.filter(
            pk__in=list(connection_ids[start : start + CLAIM_CHUNK]), claimed_until=claim_until
        )
    }
    return [_job(rows[cid]) for cid in connection_ids if cid in rows]


def _job(row: Connection) -> RefreshJob:
    adapter = get_adapter(row.provider, row.auth_type)
    ref, skip_reason = _ref_or_skip_reason(row, adapter)
    return RefreshJob(
        row.id,
        row.provider,
        row.poll_backoff_level,
        adapter=adapter,
        min_poll_interval_s=connection_poll_floor_s(row.provider, row.min_poll_interval_s),
        ref=ref,
        skip_reason=skip_reason,
        credential_owner=row.credential_owner,
    )


def _ref_or_skip_reason(row: Connection, adapter: ProviderAdapter | None) -> tuple[ConnectionRef | None, str]:
    """What the adapter polls the connection with, or why it is not polled."""
    if adapter is None:
        return None, f"no quota adapter for {row.provider} ({row.auth_type or 'any auth type'})"
    if not adapter.supports_poll:
        return None, f"{adapter.kind} has no quota endpoint; only passive headers tell its quota"
    try:
        credential = row.get_credential()
    except (CredentialDecryptionError, ImproperlyConfigured) as exc:
        return None, f"credential unusable: {exc}"
    if not credential:
        return None, "no credential stored"
    params = row.provider_params if isinstance(row.provider_params, dict) else {}
    ref = ConnectionRef(
        id=row.id,
        provider=row.provider,
        auth_type=row.auth_type,
        credential=credential,
        base_url=row.base_url,
        params={str(k): str(v) for k, v in params.items() if v is not None},
    )
    return ref, ""


def job_fetch(job: RefreshJob, client: httpx.Client, *, now: datetime | None = None) -> Outcome:
    """Poll one connection's quota endpoint. Never raises: every failure is an Outcome. No database."""
    now = now or timezone.now()
    if job.skip_reason or job.adapter is None or job.ref is None:
        return Outcome(job, now)
    started = time.monotonic()
    secrets = job_secrets(job)
    try:
        reading = job.adapter.fetch(
            job.ref, client, now, base_url_override=upstream_override(job.adapter.kind)
        )
    except FetchError as exc:
        return Outcome(job, now, error=_stripped_error(exc, secrets), duration_s=time.monotonic() - started)
    except Exception as exc:  # an adapter bug must not take the fan-out down
        # Formatted here, not by logger.exception: the exception's text may quote the credential.
        trace = strip_secrets("".join(traceback.format_exception(exc)), secrets)
        logger.error(
            "refresh connection=%s: the %s adapter raised\n%s", job.connection_id, job.adapter.kind, trace
        )
        crash = strip_secrets(f"adapter error: {type(exc).__name__}: {exc}", secrets)
        return Outcome(job, now, crash=crash, duration_s=time.monotonic() - started)
    if reading.note:
        reading = msgspec.structs.replace(reading, note=strip_secrets(reading.note, secrets))
    return Outcome(job, now, reading=reading, duration_s=time.monotonic() - started)


def job_secrets(job: RefreshJob) -> tuple[str, ...]:
    """What an upstream's answer to this job must never carry into a detail, a page or a log."""
    return (job.ref.credential,) if job.ref is not None else ()


def _stripped_error(error: FetchError, secrets: Sequence[str]) -> FetchError:
    """The error with the credential stripped from its detail (some upstreams quote the key back)."""
    detail = strip_secrets(error.failure.detail, secrets)
    if detail == error.failure.detail:
        return error
    failure = dataclasses.replace(error.failure, detail=detail)
    return FetchError(failure, status=error.status, transient=error.transient)


def outcomes_reauth(outcomes: Sequence[Outcome], *, claim_until: datetime) -> list[Outcome]:
    """DESIGN L7 as amended: a 401 on a credential that the ladder owns gets one refresh and a
    verifying poll before anything is disabled. The verifying poll's outcome replaces the 401's; a
    refused refresh token makes it ``needs_reauth``; a refresh that failed transiently is a
    transient poll failure (retried soon), not a disabled connection. A client is opened only when
    an outcome needs it."""
    if not any(_wants_reauth(outcome) for outcome in outcomes):
        return list(outcomes)
    with upstream_client() as http:
        return [
            _reauth(outcome, claim_until=claim_until, client=http) if _wants_reauth(outcome) else outcome
            for outcome in outcomes
        ]


def _wants_reauth(outcome: Outcome) -> bool:
    error = outcome.error
    return (
        error is not None
        and error.failure.classification == "auth_failed"
        and outcome.job.credential_owner == "ladder"
        and outcome.job.ref is not None
    )


def _reauth(outcome: Outcome, *, claim_until: datetime, client: httpx.Client) -> Outcome:
    job = outcome.job
    assert job.ref is not None  # noqa: S101  (narrows the type: _wants_reauth checked it)
    result = credential_refresh(
        connection_id=job.connection_id, client=client, force=True, stale_access_token=job.ref.credential
    )
    logger.info(
        "refresh connection=%s: 401 on poll, credential refresh outcome=%s", job.connection_id, result.outcome
    )
    if result.outcome == REFUSED:
        return dataclasses.replace(outcome, needs_reauth=True)
    if result.outcome in MAY_STILL_RENEW:
        # The refresh may still succeed: a transient poll failure, retried soon (not disabled).
        failure = Failure("upstream_error", detail=f"401 on poll; credential refresh {result.outcome}")
        return dataclasses.replace(outcome, error=FetchError(failure, status=401, transient=True))
    if result.outcome not in RENEWED:
        return outcome  # nothing to refresh with (failed, no refresh token, not ours): the 401 stands
    jobs = jobs_load([job.connection_id], claim_until=claim_until)
    return job_fetch(jobs[0], client) if jobs else outcome  # the verifying poll, while the claim holds
