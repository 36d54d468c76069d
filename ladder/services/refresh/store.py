"""A poll's outcome, written only while the claim is still ours. Each is logged with its
classification and kept in ``last_poll_error``:

- a reading (``ok``) is stored (``services.readings``); an unverifiable one (malformed or oversized
  body, renamed fields) is stored as such (``unverifiable``, never a guessed value);
- ``rate_limited`` (a 429 of the usage endpoint, or any throttling): the poll backs off —
  ``poll_backoff_level`` + 1, next poll after max(Retry-After, refresh_interval × 2^level, jittered,
  capped at 1 h);
- ``auth_failed``: the connection is disabled (``disabled_reason = "auth_failed"``) until an operator
  fixes it; but a credential that the ladder owns first gets one refresh and a verifying poll
  (``poll.outcomes_reauth``, DESIGN L7 as amended), and a refused refresh token disables it as
  ``needs_reauth`` (``ladder.services.credential_refresh``);
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
import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from ladder.domain.cooldown import transient_backoff_s
from ladder.domain.credentials import NEEDS_REAUTH
from ladder.domain.types import Failure, LadderConfig
from ladder.domain.windows import clamp_failure_resets
from ladder.models import Connection, FailureEvent
from ladder.providers import FetchError
from ladder.security.logredact import strip_secrets
from ladder.services.readings import ClaimLost, log_reset_clamps, reading_store
from ladder.services.refresh.poll import Outcome, job_secrets
from ladder.services.refresh_metrics import PollRecord, refresh_metrics_record
from ladder.services.state import bump_live_version, bump_state_version

logger = logging.getLogger(__name__)

POLL_BACKOFF_CAP_S = 3600.0
RETRY_AFTER_CAP_S = 24 * 3600.0
SKIPPED_RECHECK_S = 3600.0
MAX_BACKOFF_LEVEL = 20

OK = "ok"
UNVERIFIABLE = "unverifiable"
RATE_LIMITED = "rate_limited"
AUTH_FAILED = "auth_failed"
TRANSIENT = "transient"
FAILED = "failed"
SKIPPED = "skipped"
CLAIM_LOST = "claim_lost"


def outcome_apply(
    outcome: Outcome, *, claim_until: datetime, config: LadderConfig, now: datetime, live: list[str]
) -> str:
    """Write one poll's outcome, only while the claim is still ours, and return its classification
    (``auth_failed``: the connection was disabled, the snapshot itself changed). Call inside a
    transaction. The connection's id is appended to ``live`` when its latest reading changed."""
    finish = partial(_finish_failure, claim_until=claim_until, config=config, now=now)
    job = outcome.job
    cid = job.connection_id
    if outcome.reading is not None:
        reading = outcome.reading
        note = "" if reading.verifiable else f"unverifiable: {reading.note or 'no reason given'}"
        updates = {"last_polled_at": outcome.fetched_at, "poll_backoff_level": 0, "last_poll_error": note}
        try:
            reading_store(
                connection_id=cid,
                reading=reading,
                now=now,
                config=config,
                claim_until=claim_until,
                connection_updates=updates,
                live=live,
            )
        except ClaimLost:
            logger.info("refresh connection=%s outcome=claim_lost: reading dropped", cid)
            return CLAIM_LOST
        except ValidationError as exc:
            return finish(
                outcome, FAILED, "upstream_error", f"the adapter produced an invalid reading: {exc}"
            )
        if reading.verifiable:
            logger.debug("refresh connection=%s outcome=ok windows=%d", cid, len(reading.windows))
            return OK
        logger.warning("refresh connection=%s outcome=unverifiable note=%r", cid, reading.note)
        return UNVERIFIABLE
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
        if failure.classification in (AUTH_FAILED, RATE_LIMITED):  # the outcome is named like the class
            result: str = failure.classification
        else:
            result = TRANSIENT if error.transient else FAILED
        return finish(outcome, result, failure.classification, failure.detail or str(error))
    if outcome.crash:
        return finish(outcome, FAILED, "upstream_error", outcome.crash)
    reason = job.skip_reason or "nothing to poll"
    skipped = {
        "claimed_until": None,
        "next_refresh_at": now + timedelta(seconds=max(SKIPPED_RECHECK_S, config.refresh_interval_s)),
        "last_poll_error": f"not polled: {reason}",
    }
    if Connection.objects.filter(pk=cid, claimed_until=claim_until).update(**skipped) != 1:
        return CLAIM_LOST
    logger.info("refresh connection=%s outcome=skipped reason=%r", cid, reason)
    return SKIPPED


def poll_backoff_s(level: int, config: LadderConfig) -> float:
    """A throttled or refused usage endpoint: refresh_interval × 2^level, capped at 1 h."""
    if level >= MAX_BACKOFF_LEVEL:
        return POLL_BACKOFF_CAP_S
    return min(config.refresh_interval_s * 2 ** max(level, 0), POLL_BACKOFF_CAP_S)


def _finish_failure(
    outcome: Outcome,
    result: str,
    classification: str,
    detail: str,
    *,
    claim_until: datetime,
    config: LadderConfig,
    now: datetime,
) -> str:
    job = outcome.job
    cid = job.connection_id
    detail = strip_secrets(detail, job_secrets(job))
    error = outcome.error
    # A crash or an invalid reading: no upstream failure to read a wait or a reset from.
    failure, clamps = clamp_failure_resets(
        error.failure if error is not None else Failure("upstream_error"), outcome.fetched_at
    )
    log_reset_clamps(cid, clamps, source="poll")
    status = error.status if error is not None else None
    retry_after = min(max(failure.retry_after_s or 0.0, 0.0), RETRY_AFTER_CAP_S)
    level = min(job.poll_backoff_level + 1, MAX_BACKOFF_LEVEL)
    updates: dict[str, Any] = {"claimed_until": None, "last_polled_at": outcome.fetched_at}
    if result == AUTH_FAILED:
        updates |= {
            "enabled": False,
            "disabled_reason": NEEDS_REAUTH if outcome.needs_reauth else "auth_failed",
            "next_refresh_at": None,
            "poll_backoff_level": 0,
        }
        then = "connection disabled until an operator fixes it"
    else:
        if result == TRANSIENT:
            wait_s = max(retry_after, transient_backoff_s(job.poll_backoff_level) * random.uniform(0.5, 1.5))  # noqa: S311  (jitter)
        else:
            wait_s = max(retry_after, poll_backoff_s(level, config) * random.uniform(1.0, 1.25))  # noqa: S311  (jitter)
            if result == FAILED and failure.reset_at is not None and failure.reset_at > now:
                wait_s = max(min(wait_s, (failure.reset_at - now).total_seconds() + 1.0), 1.0)
        # A failed poll is a poll: the next one waits for the poll floor too (L5).
        wait_s = max(wait_s, job.min_poll_interval_s or 0.0)
        updates |= {"next_refresh_at": now + timedelta(seconds=wait_s), "poll_backoff_level": level}
        then = f"next poll in {wait_s:.0f} s"
    http = f"HTTP {status}" if status is not None else "no HTTP answer"
    message = f"{result}: {classification} ({http}): {detail}; {then}"
    updates["last_poll_error"] = message[:2000]
    if Connection.objects.filter(pk=cid, claimed_until=claim_until).update(**updates) != 1:
        logger.info("refresh connection=%s outcome=claim_lost: failure %s dropped", cid, classification)
        return CLAIM_LOST
    if error is not None or outcome.crash:
        FailureEvent.objects.create(
            connection_id=cid,
            status=status or 0,
            classification=classification,
            window=failure.window or "",
            reset_at=failure.reset_at,
            retry_after_s=failure.retry_after_s,
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
    return result


def outcomes_write(outcomes: Sequence[Outcome], *, claim_until: datetime, config: LadderConfig) -> list[str]:
    """Write outcomes in one transaction (a savepoint each), then bump the state version once when a
    connection was disabled, and the live version once for the connections whose latest reading
    changed. Returns each outcome's classification."""
    results: list[str] = []
    live: list[str] = []
    with transaction.atomic():
        now = timezone.now()
        for outcome in outcomes:
            written: list[str] = []
            try:
                with transaction.atomic():
                    result = outcome_apply(
                        outcome, claim_until=claim_until, config=config, now=now, live=written
                    )
            except DatabaseError:
                logger.exception(
                    "refresh connection=%s: storing the outcome failed", outcome.job.connection_id
                )
                result = FAILED
            else:
                live.extend(written)  # only once its savepoint is released
            results.append(result)
        if AUTH_FAILED in results:  # a connection was disabled
            bump_state_version()
        if live:
            bump_live_version(live)
    refresh_metrics_record(
        PollRecord(outcome.job.provider, result, outcome.duration_s)
        for outcome, result in zip(outcomes, results, strict=True)
    )
    return results
