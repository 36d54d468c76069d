"""The ladder's gateway API from an event loop: ``AsyncLadderClient``, on ``httpx.AsyncClient``.

It sends exactly the calls ``LadderClient`` sends (the same ``Call`` specs, the same retry rules,
the same errors and decoding): only the transport differs. One client keeps its connections
alive across requests (``max_keepalive``), so a gateway pays no TCP handshake per report, and no
thread is taken per call. The resolution cache is checked before any I/O.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

import httpx

from ladder_client.client import (
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    Call,
    ResolutionCache,
    answer_of,
    backoff_s,
    check_options,
    client_headers,
    connection_call,
    connections_call,
    credential_call,
    failure_call,
    observation_call,
    resolve_call,
    transport_error,
    usage_call,
)
from ladder_client.types import (
    BorrowedCredential,
    Candidate,
    ConnectionsReport,
    ConnectionState,
    FailureOutcome,
    Reading,
    Resolution,
    UsageEvent,
    UsageReport,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_MAX_CONNECTIONS = 32


class AsyncLadderClient:
    """``LadderClient``'s calls, awaited. Use one per event loop (httpx's pool is bound to it)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        cache_ttl_s: float = 0.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_options(timeout_s, retries, cache_ttl_s)
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.cache = ResolutionCache(cache_ttl_s, clock=clock)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            headers=client_headers(token),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    def __repr__(self) -> str:
        return f"AsyncLadderClient({self.base_url!r})"  # never the token

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncLadderClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the calls (see LadderClient for what each means) -------------------------------------

    def cached_resolution(self, model: str, candidates: Sequence[Candidate] | None) -> Resolution | None:
        """The cached answer for (model, candidates), without any I/O; None when there is none."""
        return self.cache.get((model, None if candidates is None else tuple(candidates)))

    async def resolve(self, model: str, candidates: Sequence[Candidate] | None = None) -> Resolution:
        frozen = None if candidates is None else tuple(candidates)
        key = (model, frozen)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        resolution = await self._send(resolve_call(model, frozen))
        self.cache.put(key, resolution)
        return resolution

    async def report_usage(self, events: UsageEvent | Iterable[UsageEvent]) -> UsageReport:
        return await self._send(usage_call(events))

    async def report_failure(
        self,
        connection_id: str,
        status: int,
        headers: Mapping[str, str] | httpx.Headers | None = None,
        body: object = None,
        model: str | None = None,
        observed_at: datetime | None = None,
    ) -> FailureOutcome:
        outcome = await self._send(failure_call(connection_id, status, headers, body, model, observed_at))
        self.cache.clear()
        return outcome

    async def report_observation(
        self,
        connection_id: str,
        headers: Mapping[str, str] | httpx.Headers,
        status: int = 200,
        observed_at: datetime | None = None,
    ) -> Reading | None:
        return await self._send(observation_call(connection_id, headers, status, observed_at))

    async def connections(self) -> ConnectionsReport:
        return await self._send(connections_call())

    async def connection(self, connection_id: str) -> ConnectionState:
        return await self._send(connection_call(connection_id))

    async def credential(self, connection_id: str) -> BorrowedCredential:
        return await self._send(credential_call(connection_id))

    # --- the transport ------------------------------------------------------------------------

    async def _send(self, call: Call[T]) -> T:
        attempts = 0
        while True:
            attempts += 1
            try:
                response = await self._http.request(call.method, call.path, json=call.body)
            except httpx.TransportError as exc:
                error = transport_error(
                    exc, call, base_url=self.base_url, attempts=attempts, retries=self.retries
                )
                if error is not None:
                    raise error from exc
                delay_s = backoff_s(self.retry_backoff_s, attempts)
                logger.info(
                    "ladder unreachable (%s); retry %d of %d in %.2fs", exc, attempts, self.retries, delay_s
                )
                if delay_s > 0:
                    await asyncio.sleep(delay_s)
                continue
            return answer_of(response, call, attempts=attempts)
