"""Claims on connections to poll: one conditional UPDATE per chunk, never a lock (see the package)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q

from ladder.models import Connection
from ladder.selectors.connections import connection_poll_floor_s

CLAIM_CHUNK = 500


def claim_deadline(now: datetime, lease_s: float) -> datetime:
    """The claim token of a claimant that claimed at ``now``: ``now + lease_s``."""
    return now + timedelta(seconds=lease_s)


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
