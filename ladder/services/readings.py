"""Writing readings: validation, latches (DESIGN L6), backoff reset (L7), the next poll, history.

``reading_record`` is the one way a reading enters the database, whether it comes from a poll, from
passive headers reported by the gateway, or from an error. Everything happens in one transaction
(the reading, its windows, the connection's bookkeeping, the live version: a reading is live state,
re-read by the next resolution without reloading the snapshot).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone
from msgspec.structs import replace

from ladder.domain.forecast import (
    FORECAST_MAX_READINGS,
    PERIOD_RESET_TOLERANCE_S,
    PERIOD_WITHOUT_RESET_S,
    Point,
    exhausts_at,
)
from ladder.domain.types import SOURCES, LadderConfig, Reading, SpentWindow, Thresholds, Window
from ladder.domain.windows import (
    FUTURE_TOLERANCE_S,
    ResetClamp,
    clamp_reading_resets,
    effective_poll_interval_s,
    exhaust_windows,
    is_fresh,
    limits_for,
    next_latch,
)
from ladder.models import Connection, CredentialAccess, FailureEvent, QuotaReading, QuotaWindow
from ladder.selectors.connections import connection_poll_floor_s
from ladder.selectors.snapshot import configuration_get
from ladder.services.state import bump_live_version

# DESIGN L5: services refuse readings dated more than this far in the future.
# How many earlier readings a window's latch is looked up in (an unverifiable reading without
# windows in between must not clear a latch).
LATCH_LOOKBACK_READINGS = 5
# Poll this long after a window's reset, so that the upstream has rolled over.
RESET_GRACE_S = 1.0
WINDOW_NAME_MAX = 64  # QuotaWindow.name's width
STORED_OVERAGES = ("meters-to-paid", "hard-stop")

logger = logging.getLogger(__name__)


class ClaimLost(Exception):
    """The connection's refresh claim is no longer ours (expired and taken): nothing was written."""


@dataclass(frozen=True)
class StoredReading:
    """What ``reading_record`` stored. ``reading`` carries the computed latches; ``is_latest`` is
    false when a newer reading was already stored (the reading then only joins the history)."""

    id: int
    reading: Reading
    is_latest: bool
    next_refresh_at: datetime | None


def reading_record(*, connection_id: str, reading: Reading, now: datetime) -> StoredReading:
    """Store a reading of a connection and everything that follows from it, in one transaction.

    - Refuses (ValidationError naming the field) a reading whose ``fetched_at`` lies more than 300 s
      after ``now``, lacks a zone, or has a window outside 0–100 % or a duplicate window name.
    - Each window's latch is ``next_latch`` of the same-name window in the connection's previous
      readings (the latest one that has it), against the connection's own cutoff and floor (its
      reserve shifts both, DESIGN L6); a window seen for the first time starts from its own flag.
    - ``backoff_level`` goes back to 0 when the reading is verifiable and every window is above the
      connection's re-entry floor.
    - ``next_refresh_at``: see ``next_refresh_after``.
    - The live version is bumped (and the connection stamped with it) when the reading is the
      connection's latest.

    Connection.DoesNotExist when the connection is unknown.
    """
    with transaction.atomic():
        stored = reading_store(
            connection_id=connection_id,
            reading=reading,
            now=now,
            config=configuration_get().to_domain(),
        )
        if stored.is_latest:
            bump_live_version([connection_id])
    return stored


def reading_validate(reading: Reading, now: datetime) -> None:
    errors: dict[str, str] = {}
    fetched_at = reading.fetched_at
    if timezone.is_naive(fetched_at):
        errors["fetched_at"] = "fetched_at needs a time zone"
    elif fetched_at > now + timedelta(seconds=FUTURE_TOLERANCE_S):
        errors["fetched_at"] = (
            f"fetched_at {fetched_at.isoformat()} is more than {FUTURE_TOLERANCE_S:g} s after now "
            f"({now.isoformat()}); readings from the future are refused"
        )
    if reading.source not in SOURCES:
        errors["source"] = f"source must be one of: {', '.join(SOURCES)}"
    if reading.observed_overage not in (None, "unknown", *STORED_OVERAGES):
        errors["observed_overage"] = f"observed_overage must be empty or one of: {', '.join(STORED_OVERAGES)}"
    seen: set[str] = set()
    for index, window in enumerate(reading.windows):
        field = f"windows[{index}]"
        if not window.name or len(window.name) > WINDOW_NAME_MAX:
            errors[f"{field}.name"] = f"a window name is 1–{WINDOW_NAME_MAX} characters"
        elif window.name in seen:
            errors[f"{field}.name"] = f"duplicate window name {window.name!r}"
        seen.add(window.name)
        pct = window.remaining_pct
        if not isinstance(pct, int | float) or not math.isfinite(pct) or not 0 <= pct <= 100:
            errors[f"{field}.remaining_pct"] = f"remaining_pct must be a number in 0–100, got {pct!r}"
        if window.reset_at is not None and timezone.is_naive(window.reset_at):
            errors[f"{field}.reset_at"] = "reset_at needs a time zone"
        if not all(isinstance(glob, str) and glob for glob in window.scope_models):
            errors[f"{field}.scope_models"] = "scope_models must be non-empty strings"
    if errors:
        raise ValidationError(errors)


def reading_store(
    *,
    connection_id: str,
    reading: Reading,
    now: datetime,
    config: LadderConfig,
    claim_until: datetime | None = None,
    connection_updates: dict[str, Any] | None = None,
    live: list[str] | None = None,
) -> StoredReading:
    """The body of ``reading_record`` without its transaction and live-version bump: the caller runs
    it inside ``transaction.atomic()`` and bumps the live version once for the connections appended
    to ``live`` (those whose latest reading this stored). Batch writers use it.

    With ``claim_until``, the write happens only while the connection's claim is that one (it is
    then released), else ClaimLost; ``connection_updates`` are set on the connection as well."""
    reading_validate(reading, now)
    # The resets are clamped as of the reading's own time: when the upstream said them (L7).
    reading, clamps = clamp_reading_resets(reading, reading.fetched_at)
    log_reset_clamps(connection_id, clamps, source=reading.source)
    row_values = (
        Connection.objects.filter(pk=connection_id)
        .values_list("reserve_pct", "min_poll_interval_s", "next_refresh_at", "last_polled_at", "provider")
        .first()
    )
    reserve_pct, min_poll_interval_s, scheduled, last_polled_at, provider = row_values or (None,) * 5
    # The operator's minimum interval or the adapter's floor, whichever is slower (DESIGN L5).
    floor_s = connection_poll_floor_s(provider or "", min_poll_interval_s)
    limits = limits_for(
        config,
        reserve_pct=reserve_pct,
        poll_interval_s=effective_poll_interval_s(config.refresh_interval_s, floor_s),
    )
    recent = list(
        QuotaReading.objects.filter(connection_id=connection_id)
        .order_by("-fetched_at", "-id")
        .values_list("id", "fetched_at")[:LATCH_LOOKBACK_READINGS]
    )
    is_latest = not recent or recent[0][1] <= reading.fetched_at
    previous = _previous_latches([rid for rid, fetched in recent if fetched <= reading.fetched_at])
    windows = tuple(
        replace(w, latched=next_latch(previous.get(w.name, w.latched), w.remaining_pct, limits))
        for w in reading.windows
    )
    # A quota-exhaustion failure observed after this reading's own time is newer evidence about the
    # windows it names: they stay spent and latched (a gateway may report the headers of a reply it
    # got before a 429 after reporting the 429).
    later_failures = (
        FailureEvent.objects.filter(
            connection_id=connection_id, classification="quota_exhausted", observed_at__gt=reading.fetched_at
        )
        .exclude(source="poll")  # a usage endpoint's refusal says nothing of the account's windows
        .order_by("observed_at", "id")
        .values_list("window", "windows", "model", "reset_at", "observed_at")
    )
    for window, named, model, failure_reset_at, observed_at in later_failures:
        exhausted = exhaust_windows(
            replace(reading, windows=windows),
            spent=stored_spent_windows(window, named, failure_reset_at),
            model=model or None,
            failure_reset_at=failure_reset_at,
            observed_at=observed_at,
        )
        if exhausted is not None:
            windows = exhausted[0]
    windows = windows_forecast(
        connection_id, windows, fetched_at=reading.fetched_at, cutoff_pct=limits.cutoff_pct
    )
    stored = replace(reading, windows=windows)

    updates: dict[str, Any] = dict(connection_updates or {})
    next_refresh_at: datetime | None = None
    if is_latest:
        next_refresh_at = next_refresh_after(
            stored,
            now=now,
            config=config,
            limits=limits,
            min_poll_interval_s=floor_s,
            last_polled_at=updates.get("last_polled_at", last_polled_at),
            scheduled=scheduled if reading.source == "headers" else None,
        )
        updates["next_refresh_at"] = next_refresh_at
        if above_floor(stored, limits):
            updates["backoff_level"] = 0
    query = Connection.objects.filter(pk=connection_id)
    if claim_until is not None:
        updates["claimed_until"] = None
        query = query.filter(claimed_until=claim_until)
    if updates and query.update(**updates) != 1:
        if claim_until is not None and Connection.objects.filter(pk=connection_id).exists():
            raise ClaimLost(f"{connection_id}: the refresh claim until {claim_until.isoformat()} is gone")
        raise Connection.DoesNotExist(f"no connection {connection_id!r}")
    if not updates and not Connection.objects.filter(pk=connection_id).exists():
        raise Connection.DoesNotExist(f"no connection {connection_id!r}")

    row_id = reading_rows_create(connection_id, stored)
    if is_latest and live is not None:
        live.append(connection_id)
    return StoredReading(row_id, stored, is_latest, next_refresh_at)


def reading_rows_create(connection_id: str, reading: Reading) -> int:
    """Insert the reading and its windows as they are (no check, no latch); returns the reading's id."""
    row = QuotaReading.objects.create(
        connection_id=connection_id,
        fetched_at=reading.fetched_at,
        source=reading.source,
        verifiable=reading.verifiable,
        observed_overage=reading.observed_overage if reading.observed_overage in STORED_OVERAGES else None,
        note=reading.note,
    )
    QuotaWindow.objects.bulk_create(
        QuotaWindow(
            reading=row,
            name=w.name,
            remaining_pct=float(w.remaining_pct),
            reset_at=w.reset_at,
            scope_models=list(w.scope_models),
            latched=w.latched,
            exhausts_at=w.exhausts_at,
            position=position,
        )
        for position, w in enumerate(reading.windows)
    )
    return row.id


def windows_forecast(
    connection_id: str, windows: tuple[Window, ...], *, fetched_at: datetime, cutoff_pct: float
) -> tuple[Window, ...]:
    """The windows with their ``exhausts_at`` (ladder.domain.forecast) as of the reading's own time,
    from the stored readings of each window's current period. One query, for every window at once:
    at most FORECAST_MAX_READINGS rows a window, the latest first."""
    if not windows:
        return windows
    tolerance = timedelta(seconds=PERIOD_RESET_TOLERANCE_S)
    period = Q()
    for w in windows:
        if w.reset_at is None:
            since = fetched_at - timedelta(seconds=PERIOD_WITHOUT_RESET_S)
            period |= Q(name=w.name, reset_at__isnull=True, reading__fetched_at__gte=since)
        else:
            period |= Q(name=w.name, reset_at__range=(w.reset_at - tolerance, w.reset_at + tolerance))
    rows = (
        QuotaWindow.objects.filter(
            period, reading__connection_id=connection_id, reading__fetched_at__lte=fetched_at
        )
        .order_by("-reading__fetched_at", "-id")
        .values_list("name", "reading__fetched_at", "remaining_pct", "reset_at")[
            : FORECAST_MAX_READINGS * len(windows)
        ]
    )
    points: dict[str, list[Point]] = {w.name: [] for w in windows}
    for name, at, remaining_pct, reset_at in rows:
        points[name].append(Point(at, remaining_pct, reset_at))
    return tuple(
        replace(
            w,
            exhausts_at=exhausts_at(
                [*points[w.name], Point(fetched_at, w.remaining_pct, w.reset_at)],
                cutoff_pct=cutoff_pct,
                now=fetched_at,
            ),
        )
        for w in windows
    )


def log_reset_clamps(connection_id: str, clamps: tuple[ResetClamp, ...], *, source: str) -> None:
    """An impossible reset (further ahead than its window can last) is an upstream fault worth a look."""
    for clamp in clamps:
        logger.warning(
            "impossible reset clamped: connection=%s window=%s source=%s reported=%s clamped=%s",
            connection_id,
            clamp.window or "-",
            source,
            clamp.reported.isoformat(),
            clamp.clamped.isoformat(),
        )


def stored_spent_windows(window: str, windows: object, reset_at: datetime | None) -> tuple[SpentWindow, ...]:
    """The windows a stored failure event named as spent (its ``windows`` list, else its one window)."""
    if isinstance(windows, list) and windows:
        return tuple(
            SpentWindow(str(item["name"]), _stored_time(item.get("reset_at")))
            for item in windows
            if isinstance(item, dict) and item.get("name")
        )
    return (SpentWindow(window, reset_at),) if window else ()


def _stored_time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _previous_latches(reading_ids: list[int]) -> dict[str, bool]:
    """Window name → latch in the most recent of these readings (newest first) that has the window."""
    rank = {rid: index for index, rid in enumerate(reading_ids)}
    rows = QuotaWindow.objects.filter(reading_id__in=reading_ids).values_list("reading_id", "name", "latched")
    # The oldest first, so that the newest reading that has a window sets its latch.
    return {name: latched for _, name, latched in sorted(rows, key=lambda row: -rank[row[0]])}


def above_floor(reading: Reading, limits: Thresholds) -> bool:
    """Verifiable, with windows, every one above the connection's re-entry floor: the plan is back (L7)."""
    return (
        reading.verifiable
        and bool(reading.windows)
        and all(w.remaining_pct > limits.floor_pct for w in reading.windows)
    )


def next_refresh_after(
    reading: Reading,
    *,
    now: datetime,
    config: LadderConfig,
    limits: Thresholds,
    min_poll_interval_s: float | None,
    last_polled_at: datetime | None,
    scheduled: datetime | None,
) -> datetime:
    """When the connection should be polled next after storing ``reading``:

    - every max(``refresh_interval_s``, ``min_poll_interval_s``) after now;
    - for a fresh passive-header reading, not before it would turn stale less one interval (the poll
      would learn nothing new), nor earlier than a poll already ``scheduled`` (a throttled poll stays
      backed off);
    - never later than a window's future reset (+1 s), when the reading turns stale;
    - and never before ``last_polled_at + min_poll_interval_s``: the operator's floor wins over a
      reset (DESIGN L5)."""
    interval = timedelta(seconds=max(config.refresh_interval_s, min_poll_interval_s or 0.0))
    due = now + interval
    headers = reading.source == "headers"
    if headers and reading.verifiable and is_fresh(reading, reading.windows, now, limits):
        due = max(due, reading.fetched_at + timedelta(seconds=limits.age_limit_s) - interval)
    resets = [w.reset_at for w in reading.windows if w.reset_at is not None and w.reset_at > now]
    if resets:
        due = min(due, min(resets) + timedelta(seconds=RESET_GRACE_S))
    if headers and scheduled is not None and scheduled > due:
        due = scheduled
    if min_poll_interval_s is not None and last_polled_at is not None:
        due = max(due, last_polled_at + timedelta(seconds=min_poll_interval_s))
    return due


def readings_purge(*, older_than: datetime, chunk_size: int = 2000) -> dict[str, int]:
    """Delete readings fetched before ``older_than`` — never a connection's latest one — and failure
    events observed before it (they share the readings' retention). Returns the counts deleted."""
    latest_id = (
        QuotaReading.objects.filter(connection_id=OuterRef("pk"))
        .order_by("-fetched_at", "-id")
        .values("id")[:1]
    )
    deleted_readings = 0
    while True:
        keep = (
            Connection.objects.annotate(latest_id=Subquery(latest_id))
            .filter(latest_id__isnull=False)
            .values("latest_id")
        )
        ids = list(
            QuotaReading.objects.filter(fetched_at__lt=older_than)
            .exclude(id__in=keep)
            .order_by("id")
            .values_list("id", flat=True)[:chunk_size]
        )
        if not ids:
            break
        with transaction.atomic():
            QuotaWindow.objects.filter(reading_id__in=ids).delete()
            QuotaReading.objects.filter(id__in=ids).delete()
        deleted_readings += len(ids)
    deleted_failures, _ = FailureEvent.objects.filter(observed_at__lt=older_than).delete()
    # The credential API's access record (who fetched or pushed, when) keeps the same retention.
    deleted_accesses, _ = CredentialAccess.objects.filter(at__lt=older_than).delete()
    return {
        "readings": deleted_readings,
        "failures": deleted_failures,
        "credential_accesses": deleted_accesses,
    }
