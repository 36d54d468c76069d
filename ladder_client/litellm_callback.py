"""LiteLLM's outcome hooks reporting to the ladder (docs/LITELLM.md): ``ReportingHooks``, the
asynchronous hooks both integrations share, and ``LadderCallback``, the Router's callback, which
adds the synchronous ones. Neither ever raises into the caller's request.

- success: one usage event (see ``usage_event``), its tokens and LiteLLM's cost when known; with
  ``report_headers``, the upstream's rate-limit headers as an observation (fresh quota readings at
  no extra upstream call).
- failure with an HTTP answer: its status, headers and body, which the connection's adapter
  classifies (quota exhausted → latch and cooldown to the reset). A timeout or a connection error
  says nothing about quota and is not reported.

Every report carries the time the upstream answered. LiteLLM runs success hooks after the caller
has its answer, so the headers of an earlier success can reach the ladder after a later 429: those
are dropped rather than sent to undo the 429's latch. No lock is held across a call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.core import LastKept
from ladder_client.litellm_outcomes import (
    answered_at,
    failure_details,
    quota_headers,
    reportable_failure,
    usage_event,
)
from ladder_client.reporting import PerLoop

logger = logging.getLogger(__name__)

REPORTED_FAILURES_KEPT = 512


def _as_mapping(kwargs: Any) -> Mapping[str, Any]:
    return kwargs if isinstance(kwargs, Mapping) else {}


class ReportingHooks(CustomLogger):
    """LiteLLM's asynchronous success and failure hooks, reporting through the running loop's
    ``LadderReporter`` (``loops``): usage in batches, quota headers coalesced per connection,
    failures sent at once and awaited, so the ladder has heard a 429 before LiteLLM's retry asks
    it again (LiteLLM awaits the failure hook before it retries)."""

    def __init__(self, loops: PerLoop, *, report_headers: bool = True) -> None:
        super().__init__()
        self.loops = loops
        self.report_headers = report_headers
        # LiteLLM may hand one failure to both the sync and the async hook: each is reported once.
        # The exceptions are kept by id, and held, so that their ids are not reused.
        self._seen: LastKept[int, BaseException] = LastKept(REPORTED_FAILURES_KEPT)
        self._lock = threading.Lock()  # guards _seen and _failed_at, never held across a call
        self._failed_at: dict[str, datetime] = {}

    # LiteLLM's hooks (it passes these four by keyword).
    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._guarded("usage", self.queue_success, kwargs, response_obj, end_time)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            report = self._failure_report(_as_mapping(kwargs), answered_at(end_time))
            if report is not None:
                await self.loops.reporter.report_failure(**report)
        except Exception as exc:  # the caller's request must never fail for want of a report
            logger.warning("could not report the failure to the ladder: %s", exc, exc_info=True)

    def _guarded(
        self, what: str, report: Callable[..., None], kwargs: Any, response_obj: Any, end_time: Any
    ) -> None:
        try:
            report(_as_mapping(kwargs), response_obj, answered_at(end_time))
        except Exception as exc:  # the caller's request must never fail for want of a report
            logger.warning("could not report the %s to the ladder: %s", what, exc, exc_info=True)

    def queue_success(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        event = usage_event(kwargs, response_obj, answered)
        if event is None:
            return
        reporter = self.loops.reporter
        reporter.offer_usage(event)
        headers = quota_headers(kwargs, response_obj) if self.report_headers else {}
        if headers:
            reporter.offer_headers(event.connection_id, headers, answered)

    def _failure_report(self, kwargs: Mapping[str, Any], answered: datetime) -> dict[str, Any] | None:
        """What is sent of an upstream error answer (``report_failure``'s arguments), the first time
        LiteLLM hands it over; None when there is nothing to report."""
        failure = reportable_failure(kwargs)
        if failure is None:
            return None
        connection_id, model, status, exc = failure
        with self._lock:
            if id(exc) in self._seen:
                return None
            self._seen.keep(id(exc), exc)
            self._failed_at[connection_id] = max(answered, self._failed_at.get(connection_id, answered))
        headers, body = failure_details(exc)
        return {
            "connection_id": connection_id,
            "status": status,
            "headers": headers,
            "body": body,
            "model": model,
            "observed_at": answered,
        }


class LadderCallback(ReportingHooks):
    """The Router's callback (``install_ladder``): the asynchronous hooks report through the loop's
    reporter (``loops``, shared with the strategy); the synchronous ones send directly with
    ``client``."""

    def __init__(
        self, client: LadderClient, *, report_headers: bool = True, loops: PerLoop | None = None
    ) -> None:
        super().__init__(
            loops or PerLoop(lambda: client.twin(AsyncLadderClient)), report_headers=report_headers
        )
        self.client = client

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._guarded("usage", self.report_success, kwargs, response_obj, end_time)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._guarded("failure", self.report_failure, kwargs, response_obj, end_time)

    def report_success(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        event = usage_event(kwargs, response_obj, answered)
        if event is None:
            return
        self.client.report_usage(event)
        headers = quota_headers(kwargs, response_obj) if self.report_headers else {}
        if not headers:
            return
        connection_id = event.connection_id
        with self._lock:
            failed_at = self._failed_at.get(connection_id)
        if failed_at is not None and answered <= failed_at:
            # Older than a failure already reported: at the ladder it would read as the newer
            # word and undo the failure's latch. The failure's evidence stands.
            logger.debug("quota headers of %s from %s dropped: a failure came after", connection_id, answered)
            return
        self.client.report_observation(connection_id, headers, observed_at=answered)

    def report_failure(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        report = self._failure_report(kwargs, answered)
        if report is not None:
            self.client.report_failure(**report)

    def drain(self) -> int:
        """Send the usage still queued, synchronously (when the loop that queued it is gone, and at
        interpreter exit); never raises."""
        return self.loops.drain_sync(lambda: nullcontext(self.client))
