"""Upstream failures reported by the gateway: classified by the connection's adapter, then acted on
(DESIGN L6/L7) and stored for the dashboard.

- quota_exhausted: the named window (every applicable window when none is named) is latched at 0 %
  by a reading of source "error" copied from the latest one, and the connection cools down by
  exponential backoff clamped to the window's reset (taken from the failure itself, else from the
  latest reading read before anything changed); the backoff level then goes up.
- rate_limited: a short cooldown (Retry-After, else 5 s × 2^n over the last 5 minutes), no latch.
- auth_failed: the connection is disabled (disabled_reason "auth_failed") until an operator acts;
  but a credential that the ladder owns and can refresh gets one refresh and a verifying poll first
  (DESIGN L7 as amended: ladder.services.credential_refresh.credential_refresh_after_401).
- upstream_error: stored only.

Cooldowns and latches are live state (they bump the live version, re-read by the next resolution);
disabling a connection bumps the state version (the next resolution reloads the snapshot).

A failure never shortens a cooldown already running, except that a quota exhaustion's cooldown
(the longer of the running and the new one) is clamped to the window's future reset.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from datetime import datetime, timedelta

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from msgspec.structs import replace

from ladder import models as m
from ladder.domain.cooldown import quota_cooldown_until, transient_cooldown_until
from ladder.domain.types import Failure, FailureClass, Reading, SpentWindow, Window
from ladder.domain.windows import clamp_failure_resets, exhaust_windows
from ladder.providers.registry import get_adapter
from ladder.security.crypto import CredentialDecryptionError
from ladder.security.logredact import strip_secrets
from ladder.selectors.snapshot import readings_latest
from ladder.services.credential_refresh import credential_refresh_after_401
from ladder.services.readings import WINDOW_NAME_MAX, log_reset_clamps, reading_record
from ladder.services.refresh.on_demand import refresh_request
from ladder.services.state import bump_live_version, bump_state_version

logger = logging.getLogger(__name__)

MAX_BACKOFF_LEVEL = 30  # far past the 7-day cap; keeps the column small
TRANSIENT_WINDOW = timedelta(seconds=300)
MAX_DETAIL = 2000


@dataclass(frozen=True)
class FailureOutcome:
    classification: FailureClass
    cooldown_until: datetime | None  # the cooldown this failure set (None: none)
    reset_at: datetime | None
    window: str | None
    windows: tuple[str, ...] = ()  # every window the failure latched (the first is ``window``)


def failure_classify(
    connection: m.Connection, *, status: int, headers: Mapping[str, str], body: object, observed_at: datetime
) -> tuple[Failure, bool]:
    """The adapter's verdict, and whether the adapter wants its usage re-read to make it precise.

    Without an adapter only an authentication refusal is recognised."""
    adapter = get_adapter(connection.provider, connection.auth_type)
    if adapter is None:
        classification: FailureClass = "auth_failed" if status in (401, 403) else "upstream_error"
        return Failure(classification, detail=f"HTTP {status} (no adapter for {connection.provider})"), False
    try:
        failure = adapter.classify_failure(status, headers, body, observed_at)
        return failure, adapter.wants_usage_recheck(status, failure)
    except Exception:  # an adapter must never turn a gateway report into a 500
        logger.exception("adapter %r failed to classify HTTP %s for %s", adapter, status, connection.id)
        if status in (401, 403):
            return Failure("auth_failed", detail=f"HTTP {status}"), False
        return Failure("upstream_error", detail=f"HTTP {status} (the adapter could not classify it)"), False


def failure_record(
    *,
    connection_id: str,
    status: int,
    headers: Mapping[str, str],
    body: object,
    model: str | None,
    observed_at: datetime,
    now: datetime,
) -> FailureOutcome:
    """Classify, act on and store one upstream failure. Connection.DoesNotExist for an unknown id."""
    connection = m.Connection.objects.get(pk=connection_id)
    failure, recheck = failure_classify(
        connection, status=status, headers=headers, body=body, observed_at=observed_at
    )
    failure = dataclass_replace(failure, detail=strip_secrets(failure.detail, connection_secrets(connection)))
    failure, clamps = clamp_failure_resets(failure, observed_at)
    log_reset_clamps(connection_id, clamps, source="failure")
    spent = tuple(
        dict.fromkeys(SpentWindow(w.name[:WINDOW_NAME_MAX], w.reset_at) for w in failure.spent_windows())
    )
    with transaction.atomic():
        locked = m.Connection.objects.select_for_update().get(pk=connection_id)
        window = spent[0].name if spent else None
        reset_at = failure.reset_at
        cooldown_until: datetime | None = None
        disabled = False
        latched: tuple[str, ...] = ()
        if failure.classification == "quota_exhausted":
            # The latest reading is read before anything changes: its resets are the evidence.
            latest = readings_latest(connection_ids=[connection_id]).get(connection_id)
            exhausted, window_reset = _exhausted_reading(latest, spent, model, reset_at, observed_at)
            if len(spent) > 1 or reset_at is None:
                # Every named window is spent: the connection is back only when the last one resets.
                reset_at = window_reset if window_reset is not None else reset_at
            latched = tuple(w.name for w in spent)
            if not latched and exhausted is not None:
                # No window named: every applicable one was latched, and the answer lists them (API.md).
                latched = tuple(w.name for w in exhausted.windows if w.latched and w.remaining_pct == 0.0)
            cooldown_until = quota_cooldown_until(
                now=observed_at,
                level=locked.backoff_level,
                retry_after_s=failure.retry_after_s,
                reset_at=reset_at,
            )
            if exhausted is not None:
                reading_record(connection_id=connection_id, reading=exhausted, now=now)
            locked.refresh_from_db(fields=["backoff_level", "cooldown_until"])
            locked.backoff_level = min(locked.backoff_level + 1, MAX_BACKOFF_LEVEL)
        elif failure.classification == "rate_limited":
            recent = m.FailureEvent.objects.filter(
                connection_id=connection_id,
                classification="rate_limited",
                observed_at__gt=observed_at - TRANSIENT_WINDOW,
                observed_at__lte=observed_at,
            ).count()
            cooldown_until = transient_cooldown_until(
                now=observed_at, level=recent, retry_after_s=failure.retry_after_s
            )
        elif failure.classification == "auth_failed" and _ladder_can_refresh(locked):
            # DESIGN L7 as amended: a credential the ladder owns gets one refresh and a verifying poll
            # first, recorded in the database (the credential beat and the fan-out pick it up if the
            # queued poll is dropped); a repeated 401 within the cooldown schedules nothing again.
            # Only a refused refresh token (needs_reauth) or a 401 after the refresh disables it.
            recheck = credential_refresh_after_401(connection=locked, now=now)
        elif failure.classification == "auth_failed" and (locked.enabled or not locked.disabled_reason):
            # Once disabled, another 401 changes nothing (nor overwrites needs_reauth): no reload.
            locked.enabled = False
            locked.disabled_reason = "auth_failed"
            disabled = True
        if cooldown_until is not None:
            if locked.cooldown_until is not None and locked.cooldown_until > cooldown_until:
                cooldown_until = locked.cooldown_until  # the longer of the running and the new one
            # Then clamped: never later than the upstream reset (L7).
            if failure.classification == "quota_exhausted" and reset_at and reset_at > observed_at:
                cooldown_until = min(cooldown_until, reset_at)
            locked.cooldown_until = cooldown_until
        if disabled or cooldown_until is not None:
            locked.save(
                update_fields=["enabled", "disabled_reason", "cooldown_until", "backoff_level", "updated_at"]
            )
        m.FailureEvent.objects.create(
            connection_id=connection_id,
            status=status,
            classification=failure.classification,
            model=(model or "")[:200],
            window=window or "",
            windows=[_window_json(w) for w in spent] if len(spent) > 1 else [],
            reset_at=reset_at,
            cooldown_until=cooldown_until,
            retry_after_s=failure.retry_after_s,
            detail=failure.detail[:MAX_DETAIL],
            source="gateway",
            observed_at=observed_at,
        )
        if disabled:
            bump_state_version()  # the snapshot itself changed
        elif cooldown_until is not None:
            bump_live_version([connection_id])  # a cooldown (and a latch): live state
    if recheck:
        try:
            refresh_request(connection_ids=[connection_id])
        except Exception:  # best effort: the next resolution asks again
            logger.exception("could not queue a quota refresh for %s", connection_id)
    return FailureOutcome(
        classification=failure.classification,
        cooldown_until=cooldown_until,
        reset_at=reset_at,
        window=window,
        windows=latched,
    )


def _window_json(window: SpentWindow) -> dict[str, str | None]:
    return {"name": window.name, "reset_at": window.reset_at.isoformat() if window.reset_at else None}


def connection_secrets(connection: m.Connection) -> tuple[str, ...]:
    """The connection's credential, to strip from a reported failure's detail (an upstream may quote
    the key back). None when it cannot be read: then there is nothing of ours to find."""
    try:
        credential = connection.get_credential()
    except (CredentialDecryptionError, ImproperlyConfigured):
        return ()
    return (credential,) if credential else ()


def _ladder_can_refresh(connection: m.Connection) -> bool:
    return connection.credential_owner == "ladder" and connection.has_refresh_token


def _exhausted_reading(
    latest: Reading | None,
    spent: tuple[SpentWindow, ...],
    model: str | None,
    failure_reset_at: datetime | None,
    observed_at: datetime,
) -> tuple[Reading | None, datetime | None]:
    """The latest reading with the exhausted window(s) at 0 % and latched (None: nothing to latch),
    and the reset that clamps the cooldown (read before anything changed)."""
    if latest is None:
        if not spent:
            return None, None
        # No reading yet: the failure itself is the only evidence, about the windows it names.
        scope = (model,) if model else ()
        windows = tuple(Window(w.name, 0.0, w.reset_at, scope_models=scope, latched=True) for w in spent)
        resets = [w.reset_at for w in spent if w.reset_at is not None]
        return Reading(
            fetched_at=observed_at, windows=windows, source="error", note="from an upstream failure"
        ), (max(resets) if resets else None)
    exhausted = exhaust_windows(
        latest, spent=spent, model=model, failure_reset_at=failure_reset_at, observed_at=observed_at
    )
    if exhausted is None:
        return None, None
    windows, reset_at = exhausted
    # The copy keeps the latest reading's age: a failure is evidence about one window, not the others.
    return replace(latest, windows=windows, source="error", note="latched by an upstream failure"), reset_at
