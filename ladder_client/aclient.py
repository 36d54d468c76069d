"""The ladder's gateway API from an event loop: ``AsyncLadderClient``, on ``httpx.AsyncClient``.

It sends exactly the calls ``LadderClient`` sends (``ladder_client.calls``) under the same rules
(``ladder_client.core``): only the sending differs. One client keeps its connections alive across
requests (``max_connections``), so a gateway pays no TCP handshake per report, and no thread is
taken per call. The resolution cache is checked before any I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

import httpx

from ladder_client import calls
from ladder_client.calls import Call
from ladder_client.core import ClientCore, Options
from ladder_client.types import Candidate, Resolution

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MAX_CONNECTIONS = 32


def awaiting(
    call: Callable[P, Call[T]],
) -> Callable[Concatenate[AsyncLadderClient, P], Coroutine[Any, Any, T]]:
    """The ``AsyncLadderClient`` method that sends ``call`` and returns its decoded answer."""

    @functools.wraps(call)
    async def send(self: AsyncLadderClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._send(call(*args, **kwargs))

    return send


class AsyncLadderClient(ClientCore):
    """``LadderClient``'s calls, awaited. Use one per event loop (httpx's pool is bound to it)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(base_url, token, **options)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._http = httpx.AsyncClient(transport=transport, limits=limits, **self.http_options)

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncLadderClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def resolve(self, model: str, candidates: Sequence[Candidate] | None = None) -> Resolution:
        cached = self.cached_resolution(model, candidates)
        return cached if cached is not None else await self._send(calls.resolve(model, candidates))

    report_usage = awaiting(calls.report_usage)
    report_failure = awaiting(calls.report_failure)
    report_observation = awaiting(calls.report_observation)
    connections = awaiting(calls.connections)
    connection = awaiting(calls.connection)
    credential = awaiting(calls.credential)
    push_credential = awaiting(calls.push_credential)
    models = awaiting(calls.models)

    async def _send(self, call: Call[T]) -> T:
        try:
            async for attempt in self._attempts(call):
                with attempt:
                    response = await self._http.request(call.method, call.path, json=call.body)
        except httpx.TransportError as exc:
            raise self._failure(exc, call, attempt.num) from exc
        return self._answer(response, call, attempt.num)
