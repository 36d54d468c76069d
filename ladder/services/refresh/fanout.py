"""Many polls at once (threads fetch, the calling thread writes), and the runs that the tasks call."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from ladder.domain.types import LadderConfig
from ladder.selectors.snapshot import configuration_get
from ladder.services import hotstate
from ladder.services.refresh.claim import (
    claim_deadline,
    claims_release,
    connections_claim,
    connections_claim_due,
)
from ladder.services.refresh.on_demand import refresh_pending_clear
from ladder.services.refresh.poll import Outcome, RefreshJob, job_fetch, jobs_load, outcomes_reauth
from ladder.services.refresh.store import OK, UNVERIFIABLE, outcomes_write
from ladder.services.upstream import upstream_client

logger = logging.getLogger(__name__)

WRITE_BATCH = 50
WRITE_EVERY_S = 0.25
RELEASED = "released"  # claimed, but the run's deadline came first: handed back unpolled


@dataclass
class RefreshSummary:
    claimed: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "readings": self.outcomes[OK] + self.outcomes[UNVERIFIABLE],
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
    return [job for turn in itertools.zip_longest(*groups.values()) for job in turn if job is not None]


_DONE = object()


def connections_refresh_many(
    connection_ids: Sequence[str],
    *,
    claim_until: datetime,
    deadline_s: float | None = None,
) -> RefreshSummary:
    """Poll claimed connections concurrently and store every outcome.

    Threads (``LADDER_REFRESH_CONCURRENCY`` at most, each with its own httpx.Client) only fetch;
    a provider's polls in flight are capped (``LADDER_REFRESH_PROVIDER_CONCURRENCY``, default
    ``LADDER_REFRESH_PROVIDER_CONCURRENCY_DEFAULT``). The calling thread writes the outcomes in
    batches as they arrive (one database connection, one state-version bump per batch). After
    ``deadline_s`` no new poll starts; the claims of connections not polled yet are released.
    """
    started = time.monotonic()
    jobs = jobs_load(list(connection_ids), claim_until=claim_until)
    summary = RefreshSummary(claimed=len(jobs))
    if not jobs:
        return summary
    config = configuration_get().to_domain()
    to_fetch = interleave_by_provider([job for job in jobs if not job.skip_reason])
    if skipped := [job for job in jobs if job.skip_reason]:
        now = timezone.now()
        summary.outcomes.update(
            outcomes_write([Outcome(job, now) for job in skipped], claim_until=claim_until, config=config)
        )
    if to_fetch:
        limit = int(settings.LADDER_REFRESH_CONCURRENCY)
        summary.outcomes.update(
            _fetch_and_write(
                to_fetch,
                claim_until=claim_until,
                config=config,
                threads=max(1, min(limit, len(to_fetch))),
                deadline=None if deadline_s is None else started + deadline_s,
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
            with upstream_client() as client:
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

    def write() -> None:
        outcomes = outcomes_reauth(pending, claim_until=claim_until)
        counts.update(outcomes_write(outcomes, claim_until=claim_until, config=config))
        pending.clear()

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
                write()
                last_write = time.monotonic()
        if pending:
            write()
    finally:
        stop.set()
        if released := _release_unpolled(work, claim_until=claim_until):
            counts[RELEASED] = released
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


def refresh_due_run(*, lease_s: float, deadline_s: float | None = None) -> RefreshSummary:
    """The periodic fan-out: record the beat tick, claim the due connections (up to
    ``LADDER_REFRESH_BATCH_MAX``), refresh them."""
    now = timezone.now()
    hotstate.beat_record(now=now)
    ids = connections_claim_due(now=now, limit=int(settings.LADDER_REFRESH_BATCH_MAX), lease_s=lease_s)
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
