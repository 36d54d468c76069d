"""What a gateway tells the ladder, sent the cheap way: batched usage, coalesced quota headers,
and failures at once, by one ``LadderReporter`` on the running loop's client (``PerLoop``). Shared
by the LiteLLM proxy hook (``ladder_client.litellm_proxy``) and the Router's strategy and callback;
it imports no LiteLLM.

- **Usage** goes into a bounded queue and leaves in batches (``POST /api/v1/usage`` takes up to
  1,000 events), every ``flush_interval_s`` or as soon as a batch is full, and at shutdown
  (``aclose``, or ``drain_sync`` from an ``atexit`` handler once the loop is gone). A replay is
  harmless: the request id is the ladder's idempotency key. A full queue drops the event with a
  counted warning (``dropped``) and never blocks the request.
- **Quota headers** are coalesced per connection: only the newest is kept, and it is sent at most
  once per ``header_interval_s``, or at the next flush when the utilisation it reports changed.
  Headers observed before a failure already reported for the connection are never sent (at the
  ladder they would read as the newer word and undo the failure's latch).
- **Failures** are sent at once and awaited by the caller, so the ladder has heard a 429 before
  the request's retry is routed.

No lock is held across an HTTP call: the queues are touched only between awaits.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.errors import LadderError
from ladder_client.types import UsageEvent

logger = logging.getLogger(__name__)

DEFAULT_QUEUE_MAX = 10_000
DEFAULT_BATCH_MAX = 500
DEFAULT_FLUSH_INTERVAL_S = 0.25
DEFAULT_HEADER_INTERVAL_S = 1.0
# A header whose value says how much of the quota is used: a change is sent at the next flush.
# Counters that move on every call (x-ratelimit-remaining-requests) only wait their second.
UTILISATION_MARKERS = ("utiliz", "percent", "status")


def utilisation(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of a connection's quota headers whose change is worth an observation at once."""
    return tuple(
        sorted(
            (name.lower(), value)
            for name, value in headers.items()
            if any(marker in name.lower() for marker in UTILISATION_MARKERS)
        )
    )


@dataclass
class _Pending:
    headers: dict[str, str]
    observed_at: datetime
    signature: tuple[tuple[str, str], ...]


_EVENT_FIELD = re.compile(r"^events\[(\d+)\]")


def refused(exc: LadderError) -> bool:
    """The ladder read the report and refused it (a 4xx, 429 aside): sending it again changes nothing."""
    return exc.status is not None and 400 <= exc.status < 500 and exc.status != 429


def refused_event(exc: LadderError, batch: list[UsageEvent]) -> tuple[UsageEvent, list[UsageEvent]] | None:
    """The ladder takes a batch whole or not at all, and names the event that made it refuse it
    (``events[3].cost_usd``): that event, and the others to send again. None when the refusal is
    the whole batch's (a token's scope, a body the ladder could not read)."""
    match = _EVENT_FIELD.match(exc.field or "")
    index = int(match.group(1)) if match else len(batch)
    if not refused(exc) or len(batch) < 2 or index >= len(batch):
        return None
    return batch[index], batch[:index] + batch[index + 1 :]


class LadderReporter:
    """Usage, quota headers and failures of one gateway process, sent with the running loop's
    ``AsyncLadderClient`` (``rebind`` hands it the next loop's).

    ``drain_sync`` (given a synchronous client) sends what is left when no event loop runs any more."""

    def __init__(
        self,
        client: AsyncLadderClient,
        *,
        queue_max: int = DEFAULT_QUEUE_MAX,
        batch_max: int = DEFAULT_BATCH_MAX,
        flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
        header_interval_s: float = DEFAULT_HEADER_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if queue_max < 1 or batch_max < 1 or batch_max > 1000:
            raise ValueError(f"queue_max ≥ 1 and 1 ≤ batch_max ≤ 1000, got {queue_max}, {batch_max}")
        self.client = client
        self.queue_max = queue_max
        self.batch_max = batch_max
        self.flush_interval_s = flush_interval_s
        self.header_interval_s = header_interval_s
        self._clock = clock
        self._usage: deque[UsageEvent] = deque()
        self._pending: dict[str, _Pending] = {}
        self._last_sent: dict[str, tuple[float, tuple[tuple[str, str], ...]]] = {}
        self._failed_at: dict[str, datetime] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._closed = False
        # figures, for logs and tests
        self.queued = 0
        self.sent = 0
        self.dropped = 0
        self.rejected = 0
        self.failed_batches = 0
        self.observations_coalesced = 0
        self.failures_sent = 0

    # --- usage --------------------------------------------------------------------------------

    def offer_usage(self, event: UsageEvent) -> bool:
        """Queue one usage event; False (and counted) when the queue is full. Never blocks."""
        if len(self._usage) >= self.queue_max:
            self.dropped += 1
            logger.warning(
                "ladder usage queue full (%d events): dropped %s on %s (%d dropped so far)",
                self.queue_max,
                event.request_id,
                event.connection_id,
                self.dropped,
            )
            return False
        self._usage.append(event)
        self.queued += 1
        self._start_flusher(urgent=len(self._usage) >= self.batch_max)
        return True

    @property
    def queue_length(self) -> int:
        return len(self._usage)

    async def flush(self) -> None:
        """Send every queued event (in batches) and every observation that is due."""
        await self._send_queued_usage()
        await self._send_observations(force=False)

    def _next_batch(self) -> list[UsageEvent]:
        return [self._usage.popleft() for _ in range(min(self.batch_max, len(self._usage)))]

    async def _send_queued_usage(self) -> None:
        while self._usage:
            if not await self._send_usage(self._next_batch()):
                break

    async def _send_usage(self, batch: list[UsageEvent]) -> bool:
        while True:
            try:
                await self.client.report_usage(batch)
            except LadderError as exc:
                one_refused = refused_event(exc, batch)
                if one_refused is not None:  # that one is dropped, the others sent again
                    self.rejected += 1
                    logger.warning("the ladder refused usage %s: %s", one_refused[0].request_id, exc)
                    batch = one_refused[1]
                    continue
                if exc.code == "unexpected_response" and (exc.status is None or exc.status < 400):
                    # The ladder took the batch; only its answer is unreadable (a version mismatch).
                    self.sent += len(batch)
                    logger.warning(
                        "the ladder's answer to %d usage events is unreadable: %s", len(batch), exc
                    )
                    return True
                if refused(exc):
                    self.rejected += len(batch)
                    logger.warning("the ladder refused %d usage events: %s", len(batch), exc)
                    return True
                self.failed_batches += 1
                lost = self._keep(batch)
                logger.warning(
                    "could not report %d usage events to the ladder (%s): kept for the next flush%s",
                    len(batch),
                    exc,
                    f", {lost} dropped" if lost else "",
                )
                return False
            self.sent += len(batch)
            return True

    def _keep(self, batch: list[UsageEvent]) -> int:
        """Put ``batch`` in front of the queue again, for the next flush, as far as there is room;
        returns how many were dropped for want of it."""
        room = self.queue_max - len(self._usage)
        kept = batch[:room] if room > 0 else []
        self._usage.extendleft(reversed(kept))
        lost = len(batch) - len(kept)
        self.dropped += lost
        return lost

    # --- quota headers ------------------------------------------------------------------------

    def offer_headers(self, connection_id: str, headers: Mapping[str, str], observed_at: datetime) -> None:
        """Keep the newest quota headers of a connection for the next flush that is due."""
        if not headers or self._older_than_failure(connection_id, observed_at):
            return
        pending = self._pending.get(connection_id)
        if pending is not None:
            self.observations_coalesced += 1
            if pending.observed_at > observed_at:
                return
        signature = utilisation(headers)
        self._pending[connection_id] = _Pending(dict(headers), observed_at, signature)
        last = self._last_sent.get(connection_id)
        self._start_flusher(urgent=last is None or last[1] != signature)

    async def _send_observations(self, *, force: bool) -> None:
        now = self._clock()
        for connection_id, pending in list(self._pending.items()):
            last = self._last_sent.get(connection_id)
            due = (
                force
                or last is None
                or last[1] != pending.signature
                or now - last[0] >= self.header_interval_s
            )
            if not due:
                continue
            del self._pending[connection_id]
            if self._older_than_failure(connection_id, pending.observed_at):
                continue
            self._last_sent[connection_id] = (now, pending.signature)
            try:
                await self.client.report_observation(
                    connection_id, pending.headers, observed_at=pending.observed_at
                )
            except LadderError as exc:
                logger.warning("could not report %s's quota headers to the ladder: %s", connection_id, exc)

    def _older_than_failure(self, connection_id: str, observed_at: datetime) -> bool:
        failed_at = self._failed_at.get(connection_id)
        return failed_at is not None and observed_at <= failed_at

    # --- failures -----------------------------------------------------------------------------

    async def report_failure(
        self,
        connection_id: str,
        status: int,
        *,
        headers: Mapping[str, str],
        body: object,
        model: str | None,
        observed_at: datetime,
    ) -> bool:
        """Send an upstream error answer now (the caller awaits it); False when it could not be."""
        self._failed_at[connection_id] = max(observed_at, self._failed_at.get(connection_id, observed_at))
        pending = self._pending.get(connection_id)
        if pending is not None and pending.observed_at <= observed_at:
            del self._pending[connection_id]
        try:
            await self.client.report_failure(
                connection_id, status, headers=headers, body=body, model=model, observed_at=observed_at
            )
        except LadderError as exc:
            logger.warning("could not report %s's HTTP %d to the ladder: %s", connection_id, status, exc)
            return False
        self.failures_sent += 1
        return True

    # --- the flusher --------------------------------------------------------------------------

    def _start_flusher(self, *, urgent: bool) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop here (a synchronous caller): the next flush or drain sends it
            return
        task = self._flusher
        if task is None or task.done() or task.get_loop() is not loop:
            self._wake = asyncio.Event()
            self._flusher = loop.create_task(self._run(self._wake), name="ladder-reporter")
        if urgent and self._wake is not None:
            self._wake.set()

    async def _run(self, wake: asyncio.Event) -> None:
        """Usage leaves every ``flush_interval_s``, or at once when a batch is full; a wake-up for
        changed quota headers sends only those."""
        while not self._closed:
            timed_out = False
            try:
                await asyncio.wait_for(wake.wait(), self.flush_interval_s)
            except TimeoutError:
                timed_out = True
            wake.clear()
            try:
                if timed_out or len(self._usage) >= self.batch_max:
                    await self.flush()
                else:
                    await self._send_observations(force=False)
            except Exception:  # the flusher must outlive any one bad report
                logger.exception("the ladder reporter's flush failed")
            if not self._usage and not self._pending:
                return  # restarted by the next offer: an idle gateway keeps no task awake

    async def aclose(self) -> None:
        """Send everything left (headers too, due or not), stop the flusher, close the client."""
        self._closed = True
        task, self._flusher = self._flusher, None
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            if self._wake is not None:
                self._wake.set()
            await asyncio.gather(task, return_exceptions=True)
        await self._send_queued_usage()
        await self._send_observations(force=True)
        await self.client.aclose()

    def rebind(self, client: AsyncLadderClient) -> None:
        """Send with ``client`` (a new loop's) from now on, what the loop now gone left included."""
        self.client = client
        self._closed = False
        if self._usage or self._pending:
            self._start_flusher(urgent=False)

    def drain_sync(self, client: LadderClient) -> int:
        """Send the queued usage with a synchronous client (at interpreter exit, no loop left);
        returns the number of events sent."""
        sent = 0
        while self._usage:
            batch = self._next_batch()
            try:
                client.report_usage(batch)
            except LadderError as exc:
                one_refused = refused_event(exc, batch)
                if one_refused is not None:  # that one is dropped, the others sent again
                    self.rejected += 1
                    self._usage.extendleft(reversed(one_refused[1]))
                    continue
                self.dropped += len(batch) + len(self._usage)
                logger.warning("at exit, %d usage events could not reach the ladder: %s", self.dropped, exc)
                self._usage.clear()
                break
            sent += len(batch)
        self.sent += sent
        return sent


class PerLoop:
    """An ``AsyncLadderClient`` for the running event loop, and the ``LadderReporter`` sending with
    it. httpx's pool is bound to the loop it was made on: a server has one loop; a program that runs
    several (``asyncio.run`` per call) gets a client per loop, and the reporter, with what it still
    holds, moves to it. A client given (tests) is always used."""

    def __init__(
        self,
        make_client: Callable[[], AsyncLadderClient],
        *,
        client: AsyncLadderClient | None = None,
        reporter_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._make_client = make_client
        self._given = client
        self._client = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reporter: LadderReporter | None = None
        self._reporter_options = dict(reporter_options or {})

    @property
    def client(self) -> AsyncLadderClient:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._given is None and (self._client is None or self._client.closed or self._loop is not loop):
            self._client, self._loop = self._make_client(), loop
        assert self._client is not None  # noqa: S101  (narrows the type: given, or made just above)
        return self._client

    @property
    def reporter(self) -> LadderReporter:
        client = self.client
        if self._reporter is None:
            self._reporter = LadderReporter(client, **self._reporter_options)
        elif self._reporter.client is not client:  # what it still holds goes with the new loop's client
            self._reporter.rebind(client)
        return self._reporter

    @property
    def current_reporter(self) -> LadderReporter | None:
        """The reporter last made, without making one (for a drain at exit)."""
        return self._reporter

    async def aclose(self) -> None:
        """Flush what is held (an earlier loop's leftovers too) with this loop's client, and close it."""
        if self._reporter is None:
            if self._client is not None:
                await self._client.aclose()
            return
        await self.reporter.aclose()

    def drain_sync(self, client: Callable[[], AbstractContextManager[LadderClient]]) -> int:
        """Send the usage still queued with a synchronous client, made and closed by ``client()``
        (when the loop that queued it is gone, and at interpreter exit); never raises."""
        reporter = self._reporter
        if reporter is None or not reporter.queue_length:
            return 0
        try:
            with client() as sync:
                return reporter.drain_sync(sync)
        except Exception as exc:  # a client closed by its owner, say
            logger.warning("could not send the %d usage events still queued: %s", reporter.queue_length, exc)
            return 0
