"""The ladder's gateway API (shared/contract/API.md) as calls: each written once here, its request
body built from the contract's Structs and its answer decoded into them, then sent by either client
(``LadderClient._send``, ``AsyncLadderClient._send``), which do only the I/O.

Each call is named after the client method that sends it, and its docstring is that method's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import msgspec
from msgspec import UNSET

from ladder.contract import api
from ladder_client.errors import LadderError, LadderProtocolError

T = TypeVar("T")

# The API refuses bodies over 1 MiB; an upstream error body is cut well below that.
MAX_FAILURE_BODY_CHARS = 64 * 1024

ResolutionKey = tuple[str, tuple[api.Candidate, ...] | None]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call: what is sent, whether sending it twice is harmless (only then is it sent again
    after a connection dropped), and how its JSON answer is read."""

    method: str
    path: str
    body: Any
    idempotent: bool
    decode: Callable[[Any], T]
    cache_key: ResolutionKey | None = None  # a resolution: kept in the client's cache under it
    clears_cache: bool = False  # a failure report changes what the ladder would answer

    @property
    def request(self) -> str:
        return f"{self.method} {self.path}"


def answer_as(kind: type[T], document: Any) -> T:
    """An answer (parsed JSON) as a ``kind``; LadderError naming where it differs from what this
    client expects (a version mismatch)."""
    try:
        return msgspec.convert(document, kind)
    except msgspec.ValidationError as exc:
        raise LadderError(
            f"the ladder's answer does not match this client: {exc}", code="unexpected_response"
        ) from exc


def reads(kind: type[T]) -> Callable[[Any], T]:
    return partial(answer_as, kind)


def to_json(body: msgspec.Struct) -> Any:
    """A request body as JSON values; a naive time is refused here, before anything is sent."""
    document = msgspec.to_builtins(body)
    for name in body.__struct_fields__:
        value = getattr(body, name)
        if isinstance(value, datetime) and (value.tzinfo is None or value.utcoffset() is None):
            raise ValueError(f"{name}: a time needs a zone (e.g. datetime.now(UTC)), got naive {value}")
        if isinstance(value, Decimal):  # a cost given as a Decimal: a JSON number, not text
            document[name] = float(value)
    return document


def resolution_key(model: str, candidates: Sequence[api.Candidate] | None) -> ResolutionKey:
    return model, None if candidates is None else tuple(candidates)


def resolve(model: str, candidates: Sequence[api.Candidate] | None = None) -> Call[api.Resolution]:
    """The pool for an auto id. An empty pool is a Resolution with ``empty`` set, not an error."""
    key = resolution_key(model, candidates)
    body = to_json(api.ResolveRequest(model, key[1]))
    # A read: sending it twice only recomputes the answer (and refresh requests are deduplicated).
    return Call("POST", "/api/v1/pools/resolve", body, True, reads(api.Resolution), cache_key=key)


def report_usage(events: api.UsageEvent | Iterable[api.UsageEvent]) -> Call[api.UsageResponse]:
    """Count one event, or a batch of up to 1,000 (all or none); returns the rung budgets after."""
    if isinstance(events, api.UsageEvent):
        body: Any = to_json(events)
    else:
        body = {"events": [to_json(event) for event in events]}
        if not body["events"]:
            raise ValueError("report_usage: send at least one event")
    # Safe to resend: the ladder counts each request_id once and answers a replay like the first
    # time, so a report whose answer was lost is not counted twice.
    return Call("POST", "/api/v1/usage", body, True, reads(api.UsageResponse))


def report_failure(
    connection_id: str,
    status: int,
    headers: Mapping[str, str] | httpx.Headers | None = None,
    body: object = None,
    model: str | None = None,
    observed_at: datetime | None = None,
) -> Call[api.FailureResponse]:
    """An upstream error answer (429, 402, 401…), classified by the connection's adapter. It empties
    the client's resolution cache: it changes what the ladder would answer."""
    sent = api.FailureRequest(status, _headers(headers), _failure_body(body), model, observed_at or UNSET)
    # Not idempotent: each report raises the backoff level and is stored, so a request that may
    # have reached the ladder is never sent again (only one that provably never left).
    path = f"{_connection(connection_id)}/failures"
    return Call("POST", path, to_json(sent), False, reads(api.FailureResponse), clears_cache=True)


def report_observation(
    connection_id: str,
    headers: Mapping[str, str] | httpx.Headers,
    status: int = 200,
    observed_at: datetime | None = None,
) -> Call[api.Reading | None]:
    """An upstream reply's rate-limit headers; the reading stored, or None if they told nothing."""
    sent = api.ObservationRequest(_headers(headers), status, observed_at or UNSET)
    # Storing the same headers twice stores the same reading: harmless to resend.
    path = f"{_connection(connection_id)}/observations"
    return Call(
        "POST", path, to_json(sent), True, lambda doc: answer_as(api.ObservationResponse, doc).reading
    )


def connections() -> Call[api.ConnectionList]:
    return Call("GET", "/api/v1/connections", None, True, reads(api.ConnectionList))


def connection(connection_id: str) -> Call[api.Connection]:
    return Call("GET", _connection(connection_id), None, True, _only_one)


def credential(connection_id: str) -> Call[api.CredentialAnswer]:
    """A ladder-owned connection's current access token (scope ``credentials``): the ladder
    refreshes it first when it is within its lead time, so that one program redeems each
    single-use refresh token. Errors: 409 ``credential_not_owned``, ``no_credential`` or
    ``needs_reauth``; 503 ``refresh_in_progress`` (see ``retry_after_s``)."""
    return Call("GET", f"{_connection(connection_id)}/credential", None, True, reads(api.CredentialAnswer))


def push_credential(
    connection_id: str, access_token: str, expires_at: datetime, account_id: str | None = None
) -> Call[api.CredentialInfo]:
    """A gateway-owned connection's new access token, for the ladder to poll with; the ladder
    never refreshes it. What is stored comes back, never the token."""
    sent = to_json(api.CredentialRequest(access_token, expires_at, account_id))
    # Storing the same token twice stores the same credential: harmless to resend.
    path = f"{_connection(connection_id)}/credential"
    return Call("PUT", path, sent, True, lambda doc: answer_as(api.CredentialStored, doc).credential)


def models() -> Call[tuple[str, ...]]:
    """The auto ids the ladder advertises (``GET /v1/models``)."""
    return Call("GET", "/v1/models", None, True, _model_ids)


def _connection(connection_id: str) -> str:
    return f"/api/v1/connections/{quote(connection_id, safe='')}"


def _only_one(document: Any) -> api.Connection:
    report = answer_as(api.ConnectionList, document)
    if len(report.connections) != 1:
        raise LadderProtocolError(f"expected one connection, got {len(report.connections)}")
    return report.connections[0]


def _model_ids(document: Any) -> tuple[str, ...]:
    return tuple(model.id for model in answer_as(api.ModelList, document).data)


def _headers(headers: Mapping[str, str] | httpx.Headers | None) -> dict[str, api.HeaderValue]:
    # httpx.Headers.items() joins repeated headers with ", ", the form the API expects.
    return {str(name): str(value) for name, value in (headers or {}).items()}


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
