"""The refresh pipeline: claim the connections that are due, poll them concurrently, store the outcome.

Claims (healthchecks' way, no locks): one conditional ``UPDATE … SET claimed_until = now + lease
WHERE claimed_until IS NULL OR claimed_until < now``. ``claimed_until`` is the claim's token: every
later write of the refresh is a conditional update on ``claimed_until = <token>``, so only the
claim holder writes, and a killed worker's claim lapses at the lease's end (the task's hard time
limit). A claimant's ``now`` is ``timezone.now()`` (microseconds): two claimants never share one.

Upstream base URL: ``ladder.services.upstream``.

Outcomes, each logged with its classification and kept in ``last_poll_error``:

- a reading (``ok``) is stored (``services.readings``); an unverifiable one (malformed or oversized
  body, renamed fields) is stored as such (``unverifiable``, never a guessed value);
- ``rate_limited`` (a 429 of the usage endpoint, or any throttling): the poll backs off —
  ``poll_backoff_level`` + 1, next poll after max(Retry-After, refresh_interval × 2^level, jittered,
  capped at 1 h);
- ``auth_failed``: the connection is disabled (``disabled_reason = "auth_failed"``) until an operator
  fixes it; but a credential that the ladder owns first gets one refresh and a verifying poll
  (``outcomes_reauth``, DESIGN L7 as amended), and a refused refresh token disables it as
  ``needs_reauth`` (``ladder.services.credentials``);
- ``transient`` (5xx, timeouts, connection resets): retried soon — 5 s × 2^level (≤ 300 s) × a
  random 0.5–1.5, or Retry-After when longer;
- ``failed`` (another 4xx, a poll that names a quota exhaustion, an adapter bug): backed off like a
  throttled poll, never before a named reset;
- ``skipped`` (no adapter, no quota endpoint, no credential, a credential that does not decrypt):
  nothing is fetched; looked at again in an hour.

A poll failure is stored as a FailureEvent with ``source="poll"``; it never latches a window or sets
a cooldown (those follow from the gateway's own reports, not from the usage endpoint's health).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import random
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
import msgspec
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.utils import timezone

from ladder.domain.cooldown import transient_backoff_s
from ladder.domain.credentials import NEEDS_REAUTH
from ladder.domain.types import Failure, LadderConfig, Reading
from ladder.domain.windows import clamp_failure_resets
from ladder.models import Connection, FailureEvent
from ladder.providers import ConnectionRef, FetchError, ProviderAdapter, get_adapter
from ladder.security.crypto import CredentialDecryptionError
from ladder.security.logredact import strip_secrets
from ladder.selectors.connections import connection_poll_floor_s
from ladder.services import credentials, hotstate
from ladder.services.credentials import credential_refresh
from ladder.services.enqueue import enqueue_once
from ladder.services.readings import ClaimLost, configuration_load, log_reset_clamps, reading_store
from ladder.services.refresh_metrics import PollRecord, refresh_metrics_record
from ladder.services.state import bump_live_version, bump_state_version
from ladder.services.upstream import upstream_client, upstream_override

logger = logging.getLogger(__name__)

POLL_BACKOFF_CAP_S = 3600.0
RETRY_AFTER_CAP_S = 24 * 3600.0
SKIPPED_RECHECK_S = 3600.0
MAX_BACKOFF_LEVEL = 20
CLAIM_CHUNK = 500
WRITE_BATCH = 50
WRITE_EVERY_S = 0.25

OK = "ok"
UNVERIFIABLE = "unverifiable"
RATE_LIMITED = "rate_limited"
AUTH_FAILED = "auth_failed"
TRANSIENT = "transient"
FAILED = "failed"
SKIPPED = "skipped"
CLAIM_LOST = "claim_lost"
RELEASED = "released"  # claimed, but the run's deadline came first: handed back unpolled


def claim_deadline(now: datetime, lease_s: float) -> datetime:
    """The claim token of a claimant that claimed at ``now``: ``now + lease_s``."""
    return now + timedelta(seconds=lease_s)


# --- claims ----------------------------------------------------------------------------------


def _claimable(now: datetime) -> Q:
    return Q(enabled=True, keyless=False) & (Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))


def _due(now: datetime) -> Q:
    return Q(next_refresh_at__isnull=True) | Q(next_refresh_at__lte=now)


def connections_claim_due(*, now: datetime, limit: int, lease_s: float) -> list[str]:
    """Claim up to ``limit`` enabled, non-keyless connections whose ``next_refresh_at`` has come
    (never-polled first, then the most overdue). Returns the ids claimed, with the claim token
    ``claim_deadline(now, lease_s)``; an id another claimant holds is never returned."""
    candidates = list(
        Connection.objects.filter(_claimable(now) & _due(now))
        .order_by(F("next_refresh_at").asc(nulls_first=True), "position", "id")
        .values_list("id", flat=True)[: max(0, limit)]
    )
    return _claim(candidates, now=now, lease_s=lease_s, extra=_due(now))


def connections_claim(*, connection_ids: Iterable[str], now: datetime, lease_s: float) -> list[str]:
    """Claim these connections (due or not: a refresh asked for by a resolution) when nobody holds
    them; disabled and keyless ones are never claimed, nor ones whose poll is backed off after a
    failure (an upstream's throttling is respected whoever asks). Same token as
    ``connections_claim_due``."""
    not_backed_off = Q(poll_backoff_level=0) | _due(now)
    ids = list(dict.fromkeys(connection_ids))
    return _claim(_past_poll_floor(ids, now), now=now, lease_s=lease_s, extra=not_backed_off)


def _past_poll_floor(ids: list[str], now: datetime) -> list[str]:
    """The ids whose poll floor (the operator's minimum interval or the adapter's floor) has passed
    since their last poll (DESIGN L5: a refresh a resolution or an operator asks for waits for the
    floor too; the fan-out polls the others when their next_refresh_at comes, which respects it)."""
    early: set[str] = set()
    for start in range(0, len(ids), CLAIM_CHUNK):
        rows = Connection.objects.filter(
            pk__in=ids[start : start + CLAIM_CHUNK], last_polled_at__isnull=False
        ).values_list("id", "last_polled_at", "min_poll_interval_s", "provider")
        for cid, polled, min_poll_interval_s, provider in rows:
            floor_s = connection_poll_floor_s(provider, min_poll_interval_s)
            if polled is not None and floor_s is not None and polled + timedelta(seconds=floor_s) > now:
                early.add(cid)
    return [cid for cid in ids if cid not in early] if early else ids


def _claim(ids: list[str], *, now: datetime, lease_s: float, extra: Q) -> list[str]:
    until = claim_deadline(now, lease_s)
    claimed: set[str] = set()
    for start in range(0, len(ids), CLAIM_CHUNK):
        chunk = ids[start : start + CLAIM_CHUNK]
        with transaction.atomic():
            Connection.objects.filter(_claimable(now) & extra, pk__in=chunk).update(claimed_until=until)
            claimed.update(
                Connection.objects.filter(pk__in=chunk, claimed_until=until).values_list("id", flat=True)
            )
    return [cid for cid in ids if cid in claimed]


def claims_release(*, connection_ids: Iterable[str], claim_until: datetime) -> int:
    """Hand back claims still held under this token (unpolled connections stay due)."""
    ids = list(connection_ids)
    released = 0
    for start in range(0, len(ids), CLAIM_CHUNK):
        released += Connection.objects.filter(
            pk__in=ids[start : start + CLAIM_CHUNK], claimed_until=claim_until
        ).update(claimed_until=None)
    return released


# --- one poll --------------------------------------------------------------------------------


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
    jobs: list[RefreshJob] = []
    for cid in connection_ids:
        row = rows.get(cid)
        if row is None:
            continue
        floor_s = connection_poll_floor_s(row.provider, row.min_poll_interval_s)
        base = RefreshJob(
            cid,
            row.provider,
            row.poll_backoff_level,
            min_poll_interval_s=floor_s,
            credential_owner=row.credential_owner,
        )
        adapter = get_adapter(row.provider, row.auth_type)
        if adapter is None:
            auth = row.auth_type or "any auth type"
            jobs.append(replace_job(base, skip_reason=f"no quota adapter for {row.provider} ({auth})"))
            continue
        if not adapter.supports_poll:
            reason = f"{adapter.kind} has no quota endpoint; only passive headers tell its quota"
            jobs.append(replace_job(base, adapter=adapter, skip_reason=reason))
            continue
        try:
            credential = row.get_credential()
        except (CredentialDecryptionError, ImproperlyConfigured) as exc:
            jobs.append(replace_job(base, adapter=adapter, skip_reason=f"credential unusable: {exc}"))
            continue
        if not credential:
            jobs.append(replace_job(base, adapter=adapter, skip_reason="no credential stored"))
            continue
        params = row.provider_params if isinstance(row.provider_params, dict) else {}
        ref = ConnectionRef(
            id=row.id,
            provider=row.provider,
            auth_type=row.auth_type,
            credential=credential,
            base_url=row.base_url,
            params={str(k): str(v) for k, v in params.items() if v is not None},
        )
        jobs.append(replace_job(base, adapter=adapter, ref=ref))
    return jobs


def replace_job(job: RefreshJob, **changes: Any) -> RefreshJob:
    return dataclasses.replace(job, **changes)


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


@dataclass
class Applied:
    result: str
    state_changed: bool = False  # the connection was disabled: the snapshot itself changed


def outcome_apply(
    outcome: Outcome, *, claim_until: datetime, config: LadderConfig, now: datetime, live: list[str]
) -> Applied:
    """Write one poll's outcome, only while the claim is still ours. Call inside a transaction.
    The connection's id is appended to ``live`` when its latest reading changed."""
    job = outcome.job
    cid = job.connection_id
    if outcome.reading is not None:
        reading = outcome.reading
        note = "" if reading.verifiable else f"unverifiable: {reading.note or 'no reason given'}"
        try:
            reading_store(
                connection_id=cid,
                reading=reading,
                now=now,
                config=config,
                claim_until=claim_until,
                connection_updates={
                    "last_polled_at": outcome.fetched_at,
                    "poll_backoff_level": 0,
                    "last_poll_error": note,
                },
                live=live,
            )
        except ClaimLost:
            logger.info("refresh connection=%s outcome=claim_lost: reading dropped", cid)
            return Applied(CLAIM_LOST)
        except ValidationError as exc:
            return _finish_failure(
                outcome,
                claim_until=claim_until,
                config=config,
                now=now,
                result=FAILED,
                classification="upstream_error",
                detail=f"the adapter produced an invalid reading: {exc}",
            )
        if reading.verifiable:
            logger.debug("refresh connection=%s outcome=ok windows=%d", cid, len(reading.windows))
            return Applied(OK)
        logger.warning("refresh connection=%s outcome=unverifiable note=%r", cid, reading.note)
        return Applied(UNVERIFIABLE)
    if outcome.error is not None:
        error = outcome.error
        failure = error.failure
        if error.status == 429 and failure.classification != "auth_failed":
            # The usage endpoint throttles its pollers (Claude's does, anthropics/claude-code#31637):
            # the poll backs off; the account's quota is not what it refused (DESIGN L5).
            failure = dataclasses.replace(
                failure, classification="rate_limited", window=None, windows=(), reset_at=None
            )
            outcome = dataclasses.replace(outcome, error=FetchError(failure, status=429))
        if failure.classification == "auth_failed":
            result = AUTH_FAILED
        elif failure.classification == "rate_limited" or error.status == 429:
            result = RATE_LIMITED
        elif error.transient:
            result = TRANSIENT
        else:
            result = FAILED
        return _finish_failure(
            outcome,
            claim_until=claim_until,
            config=config,
            now=now,
            result=result,
            classification=failure.classification,
            detail=failure.detail or str(error),
        )
    if outcome.crash:
        return _finish_failure(
            outcome,
            claim_until=claim_until,
            config=config,
            now=now,
            result=FAILED,
            classification="upstream_error",
            detail=outcome.crash,
        )
    reason = job.skip_reason or "nothing to poll"
    updates = {
        "claimed_until": None,
        "next_refresh_at": now + timedelta(seconds=max(SKIPPED_RECHECK_S, config.refresh_interval_s)),
        "last_poll_error": f"not polled: {reason}",
    }
    if Connection.objects.filter(pk=cid, claimed_until=claim_until).update(**updates) != 1:
        return Applied(CLAIM_LOST)
    logger.info("refresh connection=%s outcome=skipped reason=%r", cid, reason)
    return Applied(SKIPPED)


def poll_backoff_s(level: int, config: LadderConfig) -> float:
    """A throttled or refused usage endpoint: refresh_interval × 2^level, capped at 1 h."""
    if level >= MAX_BACKOFF_LEVEL:
        return POLL_BACKOFF_CAP_S
    return min(config.refresh_interval_s * 2 ** max(level, 0), POLL_BACKOFF_CAP_S)


def _finish_failure(
    outcome: Outcome,
    *,
    claim_until: datetime,
    config: LadderConfig,
    now: datetime,
    result: str,
    classification: str,
    detail: str,
) -> Applied:
    job = outcome.job
    cid = job.connection_id
    detail = strip_secrets(detail, job_secrets(job))
    error = outcome.error
    failure = error.failure if error is not None else None
    if failure is not None:
        failure, clamps = clamp_failure_resets(failure, outcome.fetched_at)
        log_reset_clamps(cid, clamps, source="poll")
    status = error.status if error is not None else None
    retry_after = failure.retry_after_s if failure is not None else None
    retry_after = min(retry_after, RETRY_AFTER_CAP_S) if retry_after is not None and retry_after > 0 else 0.0
    level = min(job.poll_backoff_level + 1, MAX_BACKOFF_LEVEL)
    updates: dict[str, Any] = {"claimed_until": None, "last_polled_at": outcome.fetched_at}
    state_changed = False
    wait_s: float | None = None
    if result == AUTH_FAILED:
        updates |= {
            "enabled": False,
            "disabled_reason": NEEDS_REAUTH if outcome.needs_reauth else "auth_failed",
            "next_refresh_at": None,
            "poll_backoff_level": 0,
        }
        state_changed = True
    elif result == TRANSIENT:
        wait_s = max(retry_after, transient_backoff_s(job.poll_backoff_level) * random.uniform(0.5, 1.5))
    else:
        wait_s = max(retry_after, poll_backoff_s(level, config) * random.uniform(1.0, 1.25))
        reset_at = failure.reset_at if failure is not None else None
        if result == FAILED and reset_at is not None and reset_at > now:
            wait_s = max(min(wait_s, (reset_at - now).total_seconds() + 1.0), 1.0)
    if wait_s is not None:
        # A failed poll is a poll: the next one waits for the poll floor too (L5).
        wait_s = max(wait_s, job.min_poll_interval_s or 0.0)
        updates |= {"next_refresh_at": now + timedelta(seconds=wait_s), "poll_backoff_level": level}
    http = f"HTTP {status}" if status is not None else "no HTTP answer"
    then = (
        "connection disabled until an operator fixes it" if wait_s is None else f"next poll in {wait_s:.0f} s"
    )
    message = f"{result}: {classification} ({http}): {detail}; {then}"
    updates["last_poll_error"] = message[:2000]
    if Connection.objects.filter(pk=cid, claimed_until=claim_until).update(**updates) != 1:
        logger.info("refresh connection=%s outcome=claim_lost: failure %s dropped", cid, classification)
        return Applied(CLAIM_LOST)
    if failure is not None or outcome.crash:
        FailureEvent.objects.create(
            connection_id=cid,
            status=status or 0,
            classification=classification,
            window=(failure.window or "") if failure is not None else "",
            reset_at=failure.reset_at if failure is not None else None,
            retry_after_s=failure.retry_after_s if failure is not None else None,
            detail=detail[:2000],
            source="poll",
            observed_at=outcome.fetched_at,
        )
    log = logger.error if result in (AUTH_FAILED, FAILED) else logger.warning
    log(
        "refresh connection=%s outcome=%s classification=%s status=%s detail=%r %s",
        cid,
        result,
        classification,
        status if status is not None else "-",
        detail,
        then,
    )
    return Applied(result, state_changed)


def connection_refresh(
    *, connection_id: str, claim_until: datetime, client: httpx.Client, now: datetime | None = None
) -> str:
    """Poll one claimed connection and store the outcome; returns its classification (``ok``,
    ``unverifiable``, ``rate_limited``, ``auth_failed``, ``transient``, ``failed``, ``skipped``,
    ``claim_lost``). Never raises for an upstream fault."""
    jobs = jobs_load([connection_id], claim_until=claim_until)
    if not jobs:
        return CLAIM_LOST
    outcome = job_fetch(jobs[0], client, now=now)
    outcome = outcomes_reauth([outcome], claim_until=claim_until, client_factory=lambda: client, close=False)[
        0
    ]
    return outcomes_write([outcome], claim_until=claim_until, config=configuration_load())[0]


def outcomes_reauth(
    outcomes: Sequence[Outcome],
    *,
    claim_until: datetime,
    client_factory: Callable[[], httpx.Client],
    close: bool = True,
) -> list[Outcome]:
    """DESIGN L7 as amended: a 401 on a credential that the ladder owns gets one refresh and a
    verifying poll before anything is disabled. The verifying poll's outcome replaces the 401's; a
    refused refresh token makes it ``needs_reauth``; a refresh that failed transiently is a
    transient poll failure (retried soon), not a disabled connection."""
    replaced: list[Outcome] = []
    client: httpx.Client | None = None
    try:
        for outcome in outcomes:
            if not _wants_reauth(outcome):
                replaced.append(outcome)
                continue
            client = client or client_factory()
            replaced.append(_reauth(outcome, claim_until=claim_until, client=client))
    finally:
        if client is not None and close:
            client.close()
    return replaced


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
    assert job.ref is not None
    result = credential_refresh(
        connection_id=job.connection_id, client=client, force=True, stale_access_token=job.ref.credential
    )
    logger.info(
        "refresh connection=%s: 401 on poll, credential refresh outcome=%s", job.connection_id, result.outcome
    )
    if result.outcome == credentials.REFUSED:
        return dataclasses.replace(outcome, needs_reauth=True)
    if result.outcome in (credentials.TRANSIENT, credentials.IN_PROGRESS, credentials.CAS_LOST):
        # The refresh may still succeed: a transient poll failure, retried soon (not disabled).
        failure = Failure("upstream_error", detail=f"401 on poll; credential refresh {result.outcome}")
        return dataclasses.replace(outcome, error=FetchError(failure, status=401, transient=True))
    if result.outcome not in (credentials.REFRESHED, credentials.FRESH):
        return outcome  # nothing to refresh with (failed, no refresh token, not ours): the 401 stands
    jobs = jobs_load([job.connection_id], claim_until=claim_until)
    if not jobs:
        return outcome
    return job_fetch(jobs[0], client)  # the verifying poll


def outcomes_write(outcomes: Sequence[Outcome], *, claim_until: datetime, config: LadderConfig) -> list[str]:
    """Write outcomes in one transaction (a savepoint each), then bump the state version once when a
    connection was disabled, and the live version once for the connections whose latest reading
    changed. Returns each outcome's classification."""
    results: list[str] = []
    live: list[str] = []
    with transaction.atomic():
        changed = False
        now = timezone.now()
        for outcome in outcomes:
            try:
                written: list[str] = []
                with transaction.atomic():
                    applied = outcome_apply(
                        outcome, claim_until=claim_until, config=config, now=now, live=written
                    )
                live.extend(written)  # only once its savepoint is released
            except DatabaseError:
                logger.exception(
                    "refresh connection=%s: storing the outcome failed", outcome.job.connection_id
                )
                results.append(FAILED)
                continue
            changed = changed or applied.state_changed
            results.append(applied.result)
        if changed:
            bump_state_version()
        if live:
            bump_live_version(live)
    refresh_metrics_record(
        PollRecord(outcome.job.provider, result, outcome.duration_s)
        for outcome, result in zip(outcomes, results, strict=True)
    )
    return results


# --- many polls at once ----------------------------------------------------------------------


@dataclass
class RefreshSummary:
    claimed: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0

    @property
    def readings(self) -> int:
        return self.outcomes[OK] + self.outcomes[UNVERIFIABLE]

    def as_dict(self) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "readings": self.readings,
            "outcomes": dict(self.outcomes),
            "elapsed_s": round(self.elapsed_s, 3),
        }


def provider_cap(provider: str) -> int:
    caps = settings.LADDER_REFRESH_PROVIDER_CONCURRENCY or {}
    default = int(settings.LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT)
    return max(1, int(caps.get(provider, default)))


def interleave_by_provider(jobs: Sequence[RefreshJob]) -> list[RefreshJob]:
    """Round-robin over providers, so that one provider's cap never idles the other threads."""
    groups: dict[str, list[RefreshJob]] = defaultdict(list)
    for job in jobs:
        groups[job.provider].append(job)
    ordered: list[RefreshJob] = []
    lists = list(groups.values())
    for index in range(max((len(group) for group in lists), default=0)):
        ordered.extend(group[index] for group in lists if index < len(group))
    return ordered


_DONE = object()


def connections_refresh_many(
    connection_ids: Sequence[str],
    *,
    claim_until: datetime,
    concurrency: int | None = None,
    deadline_s: float | None = None,
    client_factory: Callable[[], httpx.Client] | None = None,
) -> RefreshSummary:
    """Poll claimed connections concurrently and store every outcome.

    Threads (``LADDER_REFRESH_CONCURRENCY`` at most, each with its own httpx.Client) only fetch;
    a provider's polls in flight are capped (``LADDER_REFRESH_PROVIDER_CONCURRENCY``, default
    ``LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT``). The calling thread writes the outcomes in
    batches as they arrive (one database connection, one state-version bump per batch). After
    ``deadline_s`` no new poll starts; the claims of connections not polled yet are released.
    """
    started = time.monotonic()
    summary = RefreshSummary()
    jobs = jobs_load(list(connection_ids), claim_until=claim_until)
    summary.claimed = len(jobs)
    if not jobs:
        return summary
    config = configuration_load()
    to_fetch = interleave_by_provider([job for job in jobs if not job.skip_reason])
    skipped = [job for job in jobs if job.skip_reason]
    if skipped:
        now = timezone.now()
        summary.outcomes.update(
            outcomes_write([Outcome(job, now) for job in skipped], claim_until=claim_until, config=config)
        )
    if to_fetch:
        limit = concurrency or int(settings.LADDER_REFRESH_CONCURRENCY)
        summary.outcomes.update(
            _fetch_and_write(
                to_fetch,
                claim_until=claim_until,
                config=config,
                threads=max(1, min(limit, len(to_fetch))),
                deadline=None if deadline_s is None else started + deadline_s,
                client_factory=client_factory or upstream_client,
            )
        )
    summary.elapsed_s = time.monotonic() - started
    return summary


def _fetch_and_write(
    jobs: list[RefreshJob],
    *,
    claim_until: datetime,
    config: LadderConfig,
    threads: int,
    deadline: float | None,
    client_factory: Callable[[], httpx.Client],
) -> Counter[str]:
    work: queue.SimpleQueue[RefreshJob] = queue.SimpleQueue()
    for job in jobs:
        work.put(job)
    results: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop = threading.Event()
    caps: dict[str, threading.BoundedSemaphore] = {
        provider: threading.BoundedSemaphore(provider_cap(provider))
        for provider in {j.provider for j in jobs}
    }

    def fetcher() -> None:
        try:
            with client_factory() as client:
                while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                    try:
                        job = work.get_nowait()
                    except queue.Empty:
                        break
                    with caps[job.provider]:
                        results.put(job_fetch(job, client))
        except Exception:  # a client that cannot be built; the unpolled claims are released below
            logger.exception("refresh: a fetch thread failed")
        finally:
            results.put(_DONE)

    workers = [threading.Thread(target=fetcher, name=f"refresh-{i}", daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    counts: Counter[str] = Counter()
    pending: list[Outcome] = []
    last_write = time.monotonic()
    running = len(workers)
    try:
        while running:
            try:
                item = results.get(timeout=WRITE_EVERY_S)
            except queue.Empty:
                item = None
            if item is _DONE:
                running -= 1
            elif item is not None:
                pending.append(item)
            if pending and (
                len(pending) >= WRITE_BATCH or item is None or time.monotonic() - last_write >= WRITE_EVERY_S
            ):
                pending = outcomes_reauth(pending, claim_until=claim_until, client_factory=client_factory)
                counts.update(outcomes_write(pending, claim_until=claim_until, config=config))
                pending = []
                last_write = time.monotonic()
        if pending:
            pending = outcomes_reauth(pending, claim_until=claim_until, client_factory=client_factory)
            counts.update(outcomes_write(pending, claim_until=claim_until, config=config))
    finally:
        stop.set()
        counts[RELEASED] += _release_unpolled(work, claim_until=claim_until)
        if not counts[RELEASED]:
            del counts[RELEASED]
    return counts


def _release_unpolled(work: queue.SimpleQueue[RefreshJob], *, claim_until: datetime) -> int:
    unpolled: list[str] = []
    while True:
        try:
            unpolled.append(work.get_nowait().connection_id)
        except queue.Empty:
            break
    if not unpolled:
        return 0
    logger.warning("refresh: deadline reached, %d claimed connections handed back unpolled", len(unpolled))
    try:
        return claims_release(connection_ids=unpolled, claim_until=claim_until)
    except DatabaseError:
        logger.exception("refresh: releasing %d claims failed; they lapse at the lease's end", len(unpolled))
        return 0


# --- runs (what the tasks call) --------------------------------------------------------------


def refresh_due_run(
    *, lease_s: float, deadline_s: float | None = None, limit: int | None = None
) -> RefreshSummary:
    """The periodic fan-out: record the beat tick, claim the due connections, refresh them."""
    now = timezone.now()
    hotstate.beat_record(now=now)
    limit = limit if limit is not None else int(settings.LADDER_REFRESH_BATCH_MAX)
    ids = connections_claim_due(now=now, limit=limit, lease_s=lease_s)
    if not ids:
        return RefreshSummary()
    summary = connections_refresh_many(ids, claim_until=claim_deadline(now, lease_s), deadline_s=deadline_s)
    logger.info("refresh fan-out: %s", summary.as_dict())
    return summary


def refresh_connections_run(
    connection_ids: Sequence[str], *, lease_s: float, deadline_s: float | None = None
) -> RefreshSummary:
    """Refresh these connections now (a resolution's refresh list), if nobody else is on them."""
    now = timezone.now()
    ids = connections_claim(connection_ids=connection_ids, now=now, lease_s=lease_s)
    try:
        if not ids:
            return RefreshSummary()
        return connections_refresh_many(ids, claim_until=claim_deadline(now, lease_s), deadline_s=deadline_s)
    finally:
        refresh_pending_clear(connection_ids)


# --- refreshes asked for by resolutions ------------------------------------------------------


def refresh_pending_key(connection_id: str) -> str:
    return f"{hotstate.key_prefix()}:refresh_pending:{connection_id}"


def refresh_request(*, connection_ids: Iterable[str]) -> list[str]:
    """Queue an immediate refresh of these connections (a resolution's ``refresh`` list): one
    ``ladder.tasks.refresh_connections`` message, sent when the current transaction commits.

    Deduplicated: a connection already queued within ``LADDER_REFRESH_REQUEST_DEDUPE_S`` is not
    queued again (its pending key, ``SET NX`` with that TTL). Never raises: with Redis down nothing is
    queued (logged; the beat fan-out still polls the connection when due); a broker that refuses the
    message clears the keys. Returns the ids queued."""
    ids = [cid for cid in dict.fromkeys(connection_ids) if isinstance(cid, str) and cid]
    ttl_s = max(1, int(settings.LADDER_REFRESH_REQUEST_DEDUPE_S))
    keys = {refresh_pending_key(cid): cid for cid in ids}
    return enqueue_once("ladder.tasks.refresh_connections", keys, ttl_s=ttl_s, batch=True)


def refresh_is_pending(*, connection_id: str) -> bool:
    """Whether a requested refresh of this connection is queued or running (its dedupe key is set
    until the task finishes, or for ``LADDER_REFRESH_REQUEST_DEDUPE_S`` at most). False when Redis
    is unavailable: nothing can be known to be pending then."""
    with hotstate.tolerated():
        return bool(hotstate.client().exists(refresh_pending_key(connection_id)))
    return False


def refresh_pending_clear(connection_ids: Iterable[str]) -> None:
    keys = [refresh_pending_key(cid) for cid in connection_ids]
    with hotstate.tolerated():
        if keys:
            hotstate.client().delete(*keys)
