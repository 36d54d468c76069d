"""The escalation log: every gateway resolution (``POST /api/v1/pools/resolve``) of an auto id is
compared with the previous one, and a change of the rung its pool starts on is recorded as one
``EscalationEvent`` — ``up`` (a higher rung), ``empty`` (no pool) or ``down`` (a lower rung; empty →
any rung is down). The first resolution ever of an auto id records nothing. An audit trail only:
routing never reads it (DESIGN L12).

The hot path costs one Redis round trip: a Lua script swaps the auto id's last outcome for this one
and counts the resolution (``ladder_resolutions_total``) atomically. Nothing touches the database
while the outcome stays the same.

Whenever Redis reports anything else — another outcome, or none (the first sight of the auto id, or
its key expired) — the database decides: ``EscalationState`` holds each auto id's last outcome and
moves by compare-and-set (a conditional ``UPDATE … WHERE rung = <what we read>``, healthchecks
style), so two processes never log one change twice. When Redis is down every resolution takes that
path. Redis keys expire ``LADDER_ESCALATION_RECHECK_S`` after the last change, so that after an
outage (when only the database followed the changes) Redis lags the database for that long at most.
A failure here is logged and never fails the resolution. The Redis keys
assume one database per ``LADDER_HOTSTATE_PREFIX``: a server whose database is replaced under a
running Redis (tests that flush tables) needs a prefix of its own, else a stale key can hide the
first change after the flush.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from datetime import datetime
from typing import cast

import redis
from django.conf import settings
from django.db import transaction
from django.db.models import F

from ladder.domain.types import Resolution, Rung
from ladder.models import EscalationEvent, EscalationState, EscalationTally
from ladder.selectors.hotstate import redis_client, redis_key_prefix, resolutions_key
from ladder.services.hotstate import tolerated

logger = logging.getLogger(__name__)

EMPTY_CODE = "e"
CAS_ATTEMPTS = 3
WHY_MAX_PARTS = 5
WHY_MAX_CHARS = 2000

# KEYS[1] the auto id's last outcome, KEYS[2] the resolutions counter (a hash).
# ARGV[1] this outcome ("0".."4", "e" for empty), ARGV[2] the key's lifetime in s, ARGV[3] the
# counter's field. Returns the previous outcome (nil: none). An unchanged outcome keeps the key's
# expiry running, so the database is consulted again at least every ARGV[2] seconds.
_SCRIPT = """
local previous = redis.call('GET', KEYS[1])
if previous ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
return previous
"""
_SCRIPT_SHA = hashlib.sha1(_SCRIPT.encode(), usedforsecurity=False).hexdigest()


def last_outcome_key(auto_id: str) -> str:
    return f"{redis_key_prefix()}:escalation:{auto_id}"


def first_rung(resolution: Resolution) -> Rung | None:
    return resolution.pool[0].rung if resolution.pool else None


def _code(rung: int | None) -> str:
    return EMPTY_CODE if rung is None else str(int(rung))


def escalation_observe(*, resolution: Resolution, now: datetime) -> EscalationEvent | None:
    """Count a gateway resolution and log it when its first rung changed. Never raises."""
    try:
        rung = first_rung(resolution)
        # The counter's field, "<grouping>:<rung label or empty>": ladder_resolutions_total's labels.
        counter_field = f"{resolution.grouping}:{'empty' if rung is None else rung.label}"
        previous = _swap(resolution.model, rung, counter_field)
        if previous == _code(rung):
            return None
        return escalation_compare(auto_id=resolution.model, resolution=resolution, now=now)
    except Exception:  # best effort: the log never costs the gateway its answer
        logger.exception("escalation log: resolution of %s not compared", resolution.model)
        return None


def _swap(auto_id: str, rung: Rung | None, counter_field: str) -> str | None:
    """The auto id's previous outcome from Redis (None: none there, or Redis is away)."""
    recheck_s = max(1, int(settings.LADDER_ESCALATION_RECHECK_S))
    keys_and_args = (last_outcome_key(auto_id), resolutions_key(), _code(rung), recheck_s, counter_field)
    previous = None
    with tolerated():
        client = redis_client()
        try:
            previous = client.evalsha(_SCRIPT_SHA, 2, *keys_and_args)
        except redis.exceptions.NoScriptError:
            previous = client.eval(_SCRIPT, 2, *keys_and_args)  # loads it for the next calls
    return previous.decode() if isinstance(previous, bytes) else previous  # None: none there


def escalation_compare(*, auto_id: str, resolution: Resolution, now: datetime) -> EscalationEvent | None:
    """Compare this resolution's first rung with the database's last one for the auto id and move it
    by compare-and-set; the event when it changed (None: unchanged, or the first sight)."""
    rung = first_rung(resolution)
    to_rung = None if rung is None else int(rung)
    for _ in range(CAS_ATTEMPTS):
        row = EscalationState.objects.filter(pk=auto_id).values("rung").first()
        if row is None:
            # The first sight: nothing to compare with. A concurrent first sight may win; either way
            # the next change is measured from the row that stands.
            EscalationState.objects.bulk_create(
                [EscalationState(auto_id=auto_id, rung=to_rung, changed_at=now)], ignore_conflicts=True
            )
            return None
        from_rung = cast(int | None, row["rung"])
        if from_rung == to_rung:
            return None
        with transaction.atomic():
            claimed = EscalationState.objects.filter(pk=auto_id, rung=from_rung)  # None: IS NULL
            if claimed.update(rung=to_rung, changed_at=now) != 1:
                continue  # another process moved it first: compare with what it wrote
            return EscalationEvent.objects.create(
                auto_id=auto_id,
                from_rung=from_rung,
                to_rung=to_rung,
                kind=escalation_kind(from_rung, to_rung),
                why=escalation_why(resolution, from_rung),
                occurred_at=now,
            )
    logger.warning("escalation log: %s kept moving under us; this resolution is not logged", auto_id)
    return None


def escalation_kind(from_rung: int | None, to_rung: int | None) -> str:
    if to_rung is None:
        return "empty"
    return "down" if from_rung is None or to_rung < from_rung else "up"


def escalation_why(resolution: Resolution, from_rung: int | None) -> str:
    """Why the pool starts where it does, for people: the empty answer's message; for a climb, what
    excluded the rungs below (those passed since the previous rung first); for a return, who serves."""
    if not resolution.pool:
        return resolution.empty.message if resolution.empty is not None else "the pool is empty"
    first = resolution.pool[0]
    to_rung = int(first.rung)
    if from_rung is None or to_rung < from_rung:
        via = ", ".join(first.allowed_connection_ids)
        return _cap(f"{first.rung.label} serves again: {first.provider}/{first.model} via {via}")
    below = [x for x in resolution.excluded if x.rung is not None and int(x.rung) < to_rung]
    passed = [x for x in below if int(cast(Rung, x.rung)) >= from_rung]
    parts: dict[str, None] = {}
    for exclusion in passed or below:
        rung = cast(Rung, exclusion.rung)
        detail = f" ({exclusion.detail})" if exclusion.detail else ""
        parts[f"{rung.label}: {exclusion.reason} on {exclusion.connection_id}{detail}"] = None
    if not parts:
        return f"no candidate sits on a rung below {first.rung.label}"
    shown = list(parts)[:WHY_MAX_PARTS]
    more = len(parts) - len(shown)
    return _cap("; ".join(shown) + (f"; and {more} more" if more else ""))


def _cap(text: str) -> str:
    return text if len(text) <= WHY_MAX_CHARS else text[: WHY_MAX_CHARS - 1] + "…"


def escalations_purge(*, older_than: datetime, chunk_size: int = 2000) -> int:
    """Delete the events that occurred before ``older_than``, a chunk per transaction; returns how many.

    Each chunk's events are added to ``EscalationTally`` in the transaction that deletes them, so
    ``ladder_escalations_total`` never goes down. The rows are locked first: a purge running at the
    same time skips what this one deletes, and nothing is tallied twice. ``EscalationState`` (each
    auto id's last outcome) stays: the next change is still compared with it."""
    deleted = 0
    while True:
        with transaction.atomic():
            rows = list(
                EscalationEvent.objects.filter(occurred_at__lt=older_than)
                .select_for_update()
                .order_by("id")
                .values_list("id", "auto_id", "kind")[:chunk_size]
            )
            if not rows:
                return deleted
            for (auto_id, kind), count in Counter((auto_id, kind) for _, auto_id, kind in rows).items():
                EscalationTally.objects.get_or_create(auto_id=auto_id, kind=kind)
                EscalationTally.objects.filter(auto_id=auto_id, kind=kind).update(purged=F("purged") + count)
            EscalationEvent.objects.filter(id__in=[row[0] for row in rows]).delete()
        deleted += len(rows)
