"""The gateway API's plumbing: one error shape, bearer-token access, strict JSON bodies.

Every answer of `/api/v1/` that is not a success is `{"error": {"code", "message", "field"}}` with
the right status. Bad input is refused before anything is written; an unexpected exception is
logged and answered in the same shape, never as an HTML page.
"""

from __future__ import annotations

import json
import logging
import math
import traceback
from collections.abc import Callable, Collection
from functools import wraps
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from ladder.gateway.duplicate_keys import duplicate_key_path
from ladder.security.ratelimit import rate_limit_hit
from ladder.selectors.tokens import GatewayTokenGrant
from ladder.services.tokens import SCOPES, gateway_token_authenticate

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # 1 MiB
# A client that declares a larger body is still read to its end (so that it reads the 413 instead
# of a reset connection), up to this much; past it the connection is dropped.
MAX_DRAIN_BYTES = 64 << 20
DRAIN_CHUNK_BYTES = 64 << 10

View = Callable[..., HttpResponse]


class ApiError(Exception):
    """An answer other than success: status, machine code, a message for people, the field at fault."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field or None
        self.headers = headers or {}

    def response(self) -> JsonResponse:
        body = {"error": {"code": self.code, "message": self.message, "field": self.field}}
        return JsonResponse(body, status=self.status, headers=self.headers)


def invalid(message: str, field: str | None = None, *, code: str = "invalid_request") -> ApiError:
    return ApiError(400, code, message, field=field)


def unprocessable(message: str, field: str | None = None, *, code: str = "unprocessable") -> ApiError:
    return ApiError(422, code, message, field=field)


def drain_body(request: HttpRequest) -> None:
    """Read whatever is left of the request body, so that the client gets to read the answer."""
    try:
        left = MAX_DRAIN_BYTES
        while left > 0:
            chunk = request.read(min(DRAIN_CHUNK_BYTES, left))
            if not chunk:
                return
            left -= len(chunk)
    except Exception:  # a client that hung up: nothing left to protect
        logger.debug("request body drain stopped", exc_info=True)


def _declared_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _json_number(text: str) -> float | int:
    """A JSON number with a fraction or an exponent. JSON has one number type, and JSON Schema reads
    429.0 as an integer: so does the API (an integral value becomes an int, which msgspec takes where
    an int belongs, and where a float does)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a number")
    return int(value) if value.is_integer() else value


def _check_strings(document: Any) -> None:
    """Refuse text that no database column can hold: NUL characters and lone surrogates."""
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise invalid("strings must not contain NUL (\\u0000) characters", code="invalid_json")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise invalid(
                    "strings must be valid Unicode (no lone surrogates)", code="invalid_json"
                ) from None


EMPTY_KEY = '"" (the empty key)'


def read_json_body(request: HttpRequest) -> Any:
    """The request body as JSON: 415 unless it is JSON, 413 over 1 MiB, 400 unless it parses or when
    an object repeats a key (the parser would keep the last value: `{"status": 401, "status": 500}`)."""
    content_type = (request.content_type or "").lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise ApiError(
            415,
            "unsupported_media_type",
            f"send the body as application/json (got {request.content_type or 'no content type'})",
        )
    if _declared_length(request) > MAX_BODY_BYTES:
        raise ApiError(413, "body_too_large", f"the body exceeds {MAX_BODY_BYTES} bytes (1 MiB)")
    raw = request.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, "body_too_large", f"the body exceeds {MAX_BODY_BYTES} bytes (1 MiB)")
    charset = (request.content_params or {}).get("charset", "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise ApiError(415, "unsupported_media_type", f"send the body as UTF-8 (got charset {charset})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid(
            f"the body is not valid UTF-8: {exc.reason} at byte {exc.start}", code="invalid_json"
        ) from None
    if not text.strip():
        raise invalid("the body is empty; send a JSON object", code="invalid_json")
    try:
        document = json.loads(text, parse_constant=_reject_constant, parse_float=_json_number)
        _check_strings(document)
        # The duplicate check parses again when it must, at the edge of the depth the first parse allowed.
        repeated = duplicate_key_path(raw, document)
    except RecursionError:
        raise invalid("the body is nested too deeply", code="invalid_json") from None
    except ValueError as exc:
        raise invalid(f"the body is not valid JSON: {exc}", code="invalid_json") from None
    if repeated is not None:
        raise invalid(f"{repeated or EMPTY_KEY}: duplicate key", repeated)
    return document


def bearer_token(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def authenticate(request: HttpRequest, scope: str) -> GatewayTokenGrant:
    """The request's gateway token, allowed `scope`; 401 without a valid token, 403 without the scope."""
    plaintext = bearer_token(request)
    challenge = {"WWW-Authenticate": 'Bearer realm="omniroute-ladder"'}
    if plaintext is None:
        raise ApiError(
            401, "unauthenticated", "send Authorization: Bearer <gateway token>", headers=challenge
        )
    token = gateway_token_authenticate(plaintext=plaintext, now=timezone.now())
    if token is None:
        raise ApiError(401, "invalid_token", "the gateway token is unknown or revoked", headers=challenge)
    if not getattr(token, f"scope_{scope}", False):
        raise ApiError(403, "insufficient_scope", f"the gateway token {token.name!r} lacks scope {scope!r}")
    return token


def request_token(request: HttpRequest) -> GatewayTokenGrant | None:
    """The gateway token that api_view authenticated for this request (None on an open view)."""
    return getattr(request, "gateway_token", None)


def report_rate_check(token: GatewayTokenGrant) -> None:
    """429 rate_limited past LADDER_REPORT_RATE_PER_MIN reports of this token in the minute."""
    limit = int(settings.LADDER_REPORT_RATE_PER_MIN)
    retry_s = rate_limit_hit(key=f"report:{token.id}", limit=limit)
    if retry_s is not None:
        raise ApiError(
            429,
            "rate_limited",
            f"the gateway token {token.name!r} sent more than {limit} reports this minute; "
            f"retry in {retry_s} s",
            headers={"Retry-After": str(retry_s)},
        )


def connection_allowed(request: HttpRequest, connection_id: str, field: str = "connection_id") -> None:
    """403 connection_not_allowed when the request's token is limited to other connections."""
    token = request_token(request)
    if token is not None and not token.allows_connection(connection_id):
        raise ApiError(
            403,
            "connection_not_allowed",
            f"the gateway token {token.name!r} may not name connection {connection_id!r}",
            field=field,
        )


def release_frames(exc: BaseException) -> None:
    """Drop the local variables of a database error's traceback frames, down its chain of causes.

    Django's error wrapper raises its exception from a frame that the exception's own traceback
    holds: a reference cycle, and the failed cursor is a local of a frame in it. Until the garbage
    collector breaks the cycle, SQLite keeps that cursor's statement and its lock on the file (a
    client that then locks the file outright waits for it). Called once the error is handled."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


def api_view(*, methods: Collection[str], scope: str | None = None) -> Callable[[View], View]:
    """A JSON API view: allowed methods, token scope (None: open), CSRF exempt, one error shape."""
    allowed = tuple(method.upper() for method in methods)
    if scope is not None and scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                if request.method not in allowed and not (request.method == "HEAD" and "GET" in allowed):
                    raise ApiError(
                        405,
                        "method_not_allowed",
                        f"{request.method} is not allowed here; allowed: {', '.join(allowed)}",
                        headers={"Allow": ", ".join(allowed)},
                    )
                if scope is not None:
                    token = authenticate(request, scope)
                    request.gateway_token = token  # type: ignore[attr-defined]
                    if scope == "report":
                        report_rate_check(token)
                return view(request, *args, **kwargs)
            except ApiError as refused:
                error = refused
            except (OperationalError, InterfaceError) as exc:
                release_frames(exc)
                logger.warning("database unavailable: %s", exc)
                message = "the database is unavailable; retry shortly"
                error = ApiError(503, "database_unavailable", message, headers={"Retry-After": "5"})
            except DatabaseError as exc:
                logger.exception("database error answering %s %s", request.method, request.path)
                release_frames(exc)
                error = ApiError(500, "internal_error", "the ladder met an unexpected database error")
            except Exception:
                if settings.LADDER_API_PROPAGATE_EXCEPTIONS:
                    raise
                logger.exception("unexpected error answering %s %s", request.method, request.path)
                error = ApiError(500, "internal_error", "the ladder met an unexpected error")
            drain_body(request)
            return error.response()

        return csrf_exempt(wrapper)

    return decorate
