"""Anything but a success, as one exception (``LadderError``): the API's error shape, an answer in
another shape, or a transport failure, each read here once for both clients."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

import httpx
import msgspec

from ladder.contract import api

# Raised before the request reached the ladder: safe to send any call again.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The connection dropped before the answer: the ladder may have acted on the request.
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class LadderProtocolError(ValueError):
    """The ladder answered 2xx with a document this client cannot read (a version mismatch)."""


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
    text = (value or "").strip()
    if not text:
        return None
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
        error = msgspec.json.decode(response.content, type=api.Error).error
    except msgspec.DecodeError:  # not JSON, or not the error shape
        text = response.text.strip()[:200] or response.reason_phrase
        message = f"the ladder answered HTTP {response.status_code} without its error shape: {text}"
        error = api.ErrorDetail("unexpected_response", message, None)
    return LadderError(
        error.message or error.code,
        code=error.code,
        status=response.status_code,
        field=error.field,
        retry_after_s=retry_after_s,
        attempts=attempts,
    )


def transport_failure(
    exc: httpx.TransportError, request: str, *, base_url: str, attempts: int
) -> LadderError:
    """What a transport failure of ``request`` (``"POST /api/v1/usage"``) means, once it is not
    sent again (see ``ladder_client.core.resendable``)."""
    why = str(exc) or type(exc).__name__
    if isinstance(exc, NOT_SENT):
        message, code = f"could not connect to the ladder at {base_url}: {why}", "connection_failed"
    elif isinstance(exc, httpx.TimeoutException):
        message, code = f"the ladder did not answer {request} in time: {why}", "timeout"
    elif isinstance(exc, DROPPED):
        message, code = f"the connection to the ladder dropped during {request}: {why}", "connection_lost"
    else:
        message, code = f"{request} failed: {why}", "transport_error"
    return LadderError(message, code=code, attempts=attempts)
