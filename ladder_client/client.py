"""A typed client of the ladder's gateway API (shared/contract/API.md), on httpx, for a thread.

The calls are written once, in ``ladder_client.calls``, and the rules both clients follow (retries,
errors, the resolution cache) in ``ladder_client.core``: this module only sends. Of the ladder it
imports only the wire shapes (ladder.contract), never Django, so a gateway can install and use it
without running the ladder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Concatenate, ParamSpec, TypeVar, Unpack

import httpx

from ladder_client import calls
from ladder_client.calls import Call
from ladder_client.core import ClientCore, Options
from ladder_client.types import Candidate, Resolution

P = ParamSpec("P")
T = TypeVar("T")


def blocking(call: Callable[P, Call[T]]) -> Callable[Concatenate[LadderClient, P], T]:
    """The ``LadderClient`` method that sends ``call`` and returns its decoded answer."""

    @functools.wraps(call)
    def send(self: LadderClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._send(call(*args, **kwargs))

    return send


class LadderClient(ClientCore):
    """The gateway's calls to the ladder, each sent and answered in the calling thread (timeouts,
    retries and the resolution cache: see ``ClientCore``). ``self.twin(AsyncLadderClient)`` makes
    the same calls from an event loop."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(base_url, token, **options)
        self._http = httpx.Client(transport=transport, **self.http_options)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LadderClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def resolve(self, model: str, candidates: Sequence[Candidate] | None = None) -> Resolution:
        """The pool for an auto id. An empty pool is a Resolution with ``empty`` set, not an error."""
        cached = self.cached_resolution(model, candidates)
        return cached if cached is not None else self._send(calls.resolve(model, candidates))

    report_usage = blocking(calls.report_usage)
    report_failure = blocking(calls.report_failure)
    report_observation = blocking(calls.report_observation)
    connections = blocking(calls.connections)
    connection = blocking(calls.connection)
    credential = blocking(calls.credential)
    push_credential = blocking(calls.push_credential)
    models = blocking(calls.models)

    def _send(self, call: Call[T]) -> T:
        try:
            for attempt in self._attempts(call):
                with attempt:
                    response = self._http.request(call.method, call.path, json=call.body)
        except httpx.TransportError as exc:
            raise self._failure(exc, call, attempt.num) from exc
        return self._answer(response, call, attempt.num)
