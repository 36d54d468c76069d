"""``AsyncLadderClient`` over aiohttp, for the LiteLLM proxy hook (``make bench-gateway``).

Serves ``benchmarks/bench_gateway.py``: the hook makes 1–3 calls to the ladder per proxied request
on the proxy's one event loop, and httpx's own transport (httpcore) spent 0.8–1.0 ms of CPU per call
there against aiohttp's 0.3 ms (profiled under the bench, 16 clients). The proxy already depends on
aiohttp, and ``httpx-aiohttp`` (the transport the OpenAI SDK's ``DefaultAioHttpClient`` uses) puts it
under the ``httpx`` API, so the client's calls, retries, errors and decoding stay one code.

One correction to that library: it maps every ``aiohttp.ClientConnectionError`` to
``httpx.ConnectTimeout``, which the client reads as "never reached the ladder" and resends, whatever
the call. A connection that dropped after the request left (``ServerDisconnectedError``, a reset
while reading) may have reached it: a failure report sent twice would raise the backoff twice. Those
become ``httpx.RemoteProtocolError`` here, which the client resends only for idempotent calls; so
does any other aiohttp error the library leaves unmapped (an answer it cannot parse).
"""

from __future__ import annotations

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

# Raised before a byte of the request left: safe to resend any call.
_NOT_SENT = (aiohttp.ClientConnectorError, aiohttp.ServerTimeoutError)


class LadderAiohttpTransport(AiohttpTransport):
    """``AiohttpTransport`` telling a dropped connection from one never made (see the module)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except httpx.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, _NOT_SENT):
                raise httpx.RemoteProtocolError(str(exc) or type(cause).__name__, request=request) from cause
            raise
        except aiohttp.ClientError as exc:
            # What the library leaves unmapped (an answer aiohttp cannot parse: a header over 8 KiB,
            # a garbled status line) reached the client as a bare aiohttp error, which it does not
            # catch; httpx's transport raises RemoteProtocolError for the same.
            raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}", request=request) from exc


def aiohttp_transport(max_connections: int) -> httpx.AsyncBaseTransport:
    """A keep-alive aiohttp transport holding at most ``max_connections`` connections. Its session is
    made at the first request, on the loop that sends it; ``AsyncLadderClient.aclose`` closes it.
    Unlike httpx's own transport it reads no HTTP_PROXY from the environment: the ladder is reached
    directly, as a service beside the proxy."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return LadderAiohttpTransport(limits=limits)
