"""A typed client of the ladder's gateway API (shared/contract/API.md), built on httpx.

Of the ladder it imports only the wire shapes (ladder.contract), never Django, so a gateway can
install and use it without running the ladder.
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from ladder_client.types import (
    BorrowedCredential,
    Candidate,
    ConnectionsReport,
    ConnectionState,
    CredentialStored,
    CredentialSummary,
    FailureOutcome,
    LadderProtocolError,
    ModelList,
    Reading,
    Resolution,
    UsageEvent,
    UsageReport,
    decoded,
    format_time,
    to_json,
)

if TYPE_CHECKING:
    from ladder_client.aclient import AsyncLadderClient

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_RETRIES = 2
DEFAULT_RETRY_BACKOFF_S = 0.05
CACHE_MAX_ENTRIES = 1024
# The API refuses bodies over 1 MiB; an upstream error body is cut well below that.
MAX_FAILURE_BODY_CHARS = 64 * 1024


class LadderError(Exception):
    """Anything but a success: the API's error shape (status, code, field, message), or a transport
    failure (status None; code ``connection_failed``, ``connection_lost`` or ``timeout``).

    ``retry_after_s`` is set when the answer carried a Retry-After header; ``attempts`` counts the
    requests sent (1 + the retries made)."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        field: str | None = None,
        retry_after_s: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.field = field
        self.retry_after_s = retry_after_s
        self.attempts = attempts

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        status = f"HTTP {self.status} " if self.status is not None else ""
        return f"{status}{self.code}: {self.message}{where}"

    def __repr__(self) -> str:
        return (
            f"LadderError(status={self.status!r}, code={self.code!r}, field={self.field!r}, "
            f"message={self.message!r})"
        )


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from now; None when unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = (moment - now).total_seconds()
    return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable


def error_from_response(response: httpx.Response, *, attempts: int) -> LadderError:
    """The API's error shape; an answer in another shape (a proxy's HTML page) keeps its status."""
    retry_after_s = retry_after_seconds(response.headers.get("Retry-After"), datetime.now(UTC))
    try:
        document = response.json()
    except ValueError:
        document = None
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        field = error.get("field")
        return LadderError(
            str(error.get("message") or error["code"]),
            code=error["code"],
            status=response.status_code,
            field=field if isinstance(field, str) else None,
            retry_after_s=retry_after_s,
            attempts=attempts,
        )
    text = response.text.strip()[:200] or response.reason_phrase
    return LadderError(
        f"the ladder answered HTTP {response.status_code} without its error shape: {text}",
        code="unexpected_response",
        status=response.status_code,
        retry_after_s=retry_after_s,
        attempts=attempts,
    )


class ResolutionCache:
    """Resolutions by (model, candidates) for ``ttl_s`` seconds; LRU-bounded; thread-safe."""

    def __init__(
        self, ttl_s: float, *, clock: Callable[[], float], max_entries: int = CACHE_MAX_ENTRIES
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._max_entries = max_entries
        self._entries: OrderedDict[Any, tuple[float, Resolution]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def get(self, key: Any) -> Resolution | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, resolution = entry
            if self._clock() >= expires_at:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return resolution

    def put(self, key: Any, resolution: Resolution) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = (self._clock() + self.ttl_s, resolution)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _failure_body(body: object) -> object:
    """An upstream error body as JSON the ladder accepts: bytes decoded, anything long cut short."""
    if isinstance(body, bytes | bytearray):
        body = bytes(body).decode("utf-8", errors="replace")
    if isinstance(body, str):
        return body[:MAX_FAILURE_BODY_CHARS]
    if body is None or isinstance(body, bool | int | float):
        return body
    try:
        text = json.dumps(body, allow_nan=False)
    except (TypeError, ValueError):
        return str(body)[:MAX_FAILURE_BODY_CHARS]
    return body if len(text) <= MAX_FAILURE_BODY_CHARS else text[:MAX_FAILURE_BODY_CHARS]


def _headers(headers: Mapping[str, str] | httpx.Headers | None) -> dict[str, str]:
    # httpx.Headers.items() joins repeated headers with ", ", the form the API expects.
    return {str(name): str(value) for name, value in (headers or {}).items()}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call as both clients send it: built once here, sent by ``LadderClient._send`` or
    ``AsyncLadderClient._send``, its JSON answer read by ``decode``."""

    method: str
    path: str
    body: Any
    idempotent: bool
    decode: Callable[[Any], T]


def resolve_call(model: str, candidates: tuple[Candidate, ...] | None) -> Call[Resolution]:
    body: dict[str, Any] = {"model": model}
    if candidates is not None:
        body["candidates"] = [to_json(candidate) for candidate in candidates]
    # A read: sending it twice only recomputes the answer (and refresh requests are deduplicated).
    return Call("POST", "/api/v1/pools/resolve", body, True, lambda doc: _parsed(doc, Resolution))


def usage_call(events: UsageEvent | Iterable[UsageEvent]) -> Call[UsageReport]:
    if isinstance(events, UsageEvent):
        body: Any = to_json(events)
    else:
        batch = [to_json(event) for event in events]
        if not batch:
            raise ValueError("report_usage: send at least one event")
        body = {"events": batch}
    # Safe to resend: the ladder counts each request_id once and answers a replay like the first
    # time, so a report whose answer was lost is not counted twice.
    return Call("POST", "/api/v1/usage", body, True, lambda doc: _parsed(doc, UsageReport))


def failure_call(
    connection_id: str,
    status: int,
    headers: Mapping[str, str] | httpx.Headers | None,
    body: object,
    model: str | None,
    observed_at: datetime | None,
) -> Call[FailureOutcome]:
    document: dict[str, Any] = {"status": status, "headers": _headers(headers), "body": _failure_body(body)}
    if model is not None:
        document["model"] = model
    if observed_at is not None:
        document["observed_at"] = format_time(observed_at, "observed_at")
    # Not idempotent: each report raises the backoff level and is stored, so a request that may
    # have reached the ladder is never sent again (only one that provably never left).
    path = f"/api/v1/connections/{_segment(connection_id)}/failures"
    return Call("POST", path, document, False, lambda doc: _parsed(doc, FailureOutcome))


def _reading(answer: Any) -> Reading | None:
    reading = answer.get("reading") if isinstance(answer, dict) else None
    return None if reading is None else _parsed(reading, Reading)


def observation_call(
    connection_id: str,
    headers: Mapping[str, str] | httpx.Headers,
    status: int,
    observed_at: datetime | None,
) -> Call[Reading | None]:
    document: dict[str, Any] = {"status": status, "headers": _headers(headers)}
    if observed_at is not None:
        document["observed_at"] = format_time(observed_at, "observed_at")
    # Storing the same headers twice stores the same reading: harmless to resend.
    path = f"/api/v1/connections/{_segment(connection_id)}/observations"
    return Call("POST", path, document, True, _reading)


def connections_call() -> Call[ConnectionsReport]:
    return Call("GET", "/api/v1/connections", None, True, lambda doc: _parsed(doc, ConnectionsReport))


def _one_connection(document: Any) -> ConnectionState:
    report = _parsed(document, ConnectionsReport)
    if len(report.connections) != 1:
        raise LadderProtocolError(f"expected one connection, got {len(report.connections)}")
    return report.connections[0]


def connection_call(connection_id: str) -> Call[ConnectionState]:
    return Call("GET", f"/api/v1/connections/{_segment(connection_id)}", None, True, _one_connection)


def credential_call(connection_id: str) -> Call[BorrowedCredential]:
    path = f"/api/v1/connections/{_segment(connection_id)}/credential"
    return Call("GET", path, None, True, lambda doc: _parsed(doc, BorrowedCredential))


def transport_error(
    exc: httpx.TransportError, call: Call[Any], *, base_url: str, attempts: int, retries: int
) -> LadderError | None:
    """What a transport failure means for ``call`` after ``attempts`` sends: None to retry it (a
    request that never reached the ladder, whatever the call; for idempotent calls only, one whose
    connection dropped before the answer), else the LadderError to raise. A read timeout is not
    retried: the ladder may still be working on it, and the caller's time is spent."""
    method, path = call.method, call.path
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        if attempts <= retries:
            return None
        return LadderError(
            f"could not connect to the ladder at {base_url}: {_why(exc)}",
            code="connection_failed",
            attempts=attempts,
        )
    if isinstance(exc, httpx.TimeoutException):
        return LadderError(
            f"the ladder did not answer {method} {path} in time: {_why(exc)}",
            code="timeout",
            attempts=attempts,
        )
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        if call.idempotent and attempts <= retries:
            return None
        return LadderError(
            f"the connection to the ladder dropped during {method} {path}: {_why(exc)}",
            code="connection_lost",
            attempts=attempts,
        )
    return LadderError(f"{method} {path} failed: {_why(exc)}", code="transport_error", attempts=attempts)


def answer_of(response: httpx.Response, call: Call[T], *, attempts: int) -> T:
    """The decoded answer to ``call``, or the LadderError its response stands for."""
    if response.status_code >= 400:
        raise error_from_response(response, attempts=attempts)
    try:
        document = response.json()
    except ValueError:
        raise LadderError(
            f"the ladder answered {call.method} {call.path} with something other than JSON",
            code="unexpected_response",
            status=response.status_code,
            attempts=attempts,
        ) from None
    return call.decode(document)


def backoff_s(retry_backoff_s: float, attempts: int) -> float:
    return retry_backoff_s * (2 ** (attempts - 1))


def client_headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": "ladder-client/0.1",
    }


def check_options(timeout_s: float, retries: int, cache_ttl_s: float) -> None:
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if retries < 0:
        raise ValueError(f"retries must be 0 or more, got {retries}")
    if cache_ttl_s < 0:
        raise ValueError(f"cache_ttl_s must be 0 (off) or more, got {cache_ttl_s}")


class LadderClient:
    """The gateway's calls to the ladder.

    Timeouts: ``timeout_s`` bounds each request (connect, read, write). Retries: only when the
    connection failed (see ``transport_error``), at most ``retries`` times, after
    ``retry_backoff_s`` × 2^n; an HTTP answer, even a 5xx, is never retried: the ladder answered,
    and the caller decides. ``cache_ttl_s`` > 0 keeps each resolution that long (per model and
    candidates) for gateways that resolve on every request; a reported failure empties the cache,
    since it changes what the ladder would answer. ``AsyncLadderClient`` (ladder_client.aclient)
    makes the same calls from an event loop.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        cache_ttl_s: float = 0.0,
        transport: httpx.BaseTransport | None = None,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_options(timeout_s, retries, cache_ttl_s)
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.cache = ResolutionCache(cache_ttl_s, clock=clock)
        self._token = token
        self._timeout_s = timeout_s
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            headers=client_headers(token),
        )

    def __repr__(self) -> str:
        return f"LadderClient({self.base_url!r})"  # never the token

    def close(self) -> None:
        self._http.close()

    def asynchronous(self) -> AsyncLadderClient:
        """A new ``AsyncLadderClient`` to the same ladder, with the same token and options."""
        from ladder_client.aclient import AsyncLadderClient

        return AsyncLadderClient(
            self.base_url,
            self._token,
            timeout_s=self._timeout_s,
            retries=self.retries,
            cache_ttl_s=self.cache.ttl_s,
            retry_backoff_s=self.retry_backoff_s,
        )

    def __enter__(self) -> LadderClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the calls ----------------------------------------------------------------------------

    def resolve(self, model: str, candidates: Sequence[Candidate] | None = None) -> Resolution:
        """The pool for an auto id. An empty pool is a Resolution with ``empty`` set, not an error."""
        frozen = None if candidates is None else tuple(candidates)
        key = (model, frozen)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        resolution = self._send(resolve_call(model, frozen))
        self.cache.put(key, resolution)
        return resolution

    def report_usage(self, events: UsageEvent | Iterable[UsageEvent]) -> UsageReport:
        """Count one event, or a batch of up to 1,000 (all or none); returns the rung budgets after."""
        return self._send(usage_call(events))

    def report_failure(
        self,
        connection_id: str,
        status: int,
        headers: Mapping[str, str] | httpx.Headers | None = None,
        body: object = None,
        model: str | None = None,
        observed_at: datetime | None = None,
    ) -> FailureOutcome:
        """An upstream error answer (429, 402, 401…), classified by the connection's adapter."""
        outcome = self._send(failure_call(connection_id, status, headers, body, model, observed_at))
        self.cache.clear()
        return outcome

    def report_observation(
        self,
        connection_id: str,
        headers: Mapping[str, str] | httpx.Headers,
        status: int = 200,
        observed_at: datetime | None = None,
    ) -> Reading | None:
        """An upstream reply's rate-limit headers; the reading stored, or None if they told nothing."""
        return self._send(observation_call(connection_id, headers, status, observed_at))

    def connections(self) -> ConnectionsReport:
        return self._send(connections_call())

    def connection(self, connection_id: str) -> ConnectionState:
        return self._send(connection_call(connection_id))

    def credential(self, connection_id: str) -> BorrowedCredential:
        """A ladder-owned connection's current access token (scope ``credentials``): the ladder
        refreshes it first when it is within its lead time, so that one program redeems each
        single-use refresh token. Errors: 409 ``credential_not_owned``, ``no_credential`` or
        ``needs_reauth``; 503 ``refresh_in_progress`` (see ``retry_after_s``)."""
        return self._send(credential_call(connection_id))

    def push_credential(
        self,
        connection_id: str,
        access_token: str,
        expires_at: datetime,
        account_id: str | None = None,
    ) -> CredentialSummary:
        """A gateway-owned connection's new access token, for the ladder to poll with; the ladder
        never refreshes it. What is stored comes back, never the token."""
        document: dict[str, Any] = {
            "access_token": access_token,
            "expires_at": format_time(expires_at, "expires_at"),
        }
        if account_id is not None:
            document["account_id"] = account_id
        # Storing the same token twice stores the same credential: harmless to resend.
        path = f"/api/v1/connections/{_segment(connection_id)}/credential"
        stored = self._send(Call("PUT", path, document, True, lambda doc: _parsed(doc, CredentialStored)))
        return stored.credential

    def models(self) -> tuple[str, ...]:
        """The auto ids the ladder advertises (``GET /v1/models``)."""
        listed = self._send(Call("GET", "/v1/models", None, True, lambda doc: _parsed(doc, ModelList)))
        return tuple(model.id for model in listed.data)

    # --- the transport ------------------------------------------------------------------------

    def _send(self, call: Call[T]) -> T:
        """One API call; its decoded answer, or LadderError (retries: see ``transport_error``)."""
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self._http.request(call.method, call.path, json=call.body)
            except httpx.TransportError as exc:
                error = transport_error(
                    exc, call, base_url=self.base_url, attempts=attempts, retries=self.retries
                )
                if error is not None:
                    raise error from exc
                self._pause(attempts, exc)
                continue
            return answer_of(response, call, attempts=attempts)

    def _pause(self, attempts: int, exc: Exception) -> None:
        delay_s = backoff_s(self.retry_backoff_s, attempts)
        logger.info("ladder unreachable (%s); retry %d of %d in %.2fs", exc, attempts, self.retries, delay_s)
        if delay_s > 0:
            time.sleep(delay_s)


def _why(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _segment(connection_id: str) -> str:
    return quote(connection_id, safe="")


def _parsed(document: Any, kind: type[T]) -> T:
    try:
        return decoded(document, kind)
    except LadderProtocolError as exc:
        raise LadderError(
            f"the ladder's answer does not match this client: {exc}", code="unexpected_response"
        ) from exc
