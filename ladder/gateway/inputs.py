"""Request bodies of the gateway API → typed values, decoded into the Structs of ladder.contract.api.

A wrong shape is a 400 naming the field by its path (`events[3].input_tokens: must be ≥ 0`),
translated from msgspec's (`... - at `$.events[3].input_tokens``). A well-formed time that the ladder
cannot use is a 422.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

import msgspec

from ladder.contract import api
from ladder.contract.fault import Step, field_path, located, unknown_key, value_at
from ladder.domain.autoid import AutoIdError, parse_auto_id
from ladder.domain.types import Candidate
from ladder.gateway.decorators import ApiError, invalid, unprocessable
from ladder.services.usage import UsageInput, quantize_usd

T = TypeVar("T")

# --- msgspec's errors, in the API's words -------------------------------------------------------

_KEY = re.compile(r"^Object (?P<kind>missing required|contains unknown) field `(?P<key>[^`]*)`$")
_BOUND = re.compile(r"^Expected `(?P<type>\w+)` (?P<length>of length )?(?P<op>[<>]=?) (?P<limit>[-\d.e+]+)$")
_TYPE_WORDS = {
    "str": "a string",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "null": "null",
    "array": "a list",
    "object": "an object",
    "datetime": "an ISO 8601 time",
}
_OPS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥"}
_SIZED = {"str": "characters", "array": "items", "object": "entries"}


def _number(text: str) -> str:
    value = float(text)
    return str(int(value)) if value.is_integer() else text


def _words(types: str) -> str:
    words = [_TYPE_WORDS.get(name.strip(" `"), name.strip(" `")) for name in types.split("|")]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _reworded(what: str) -> str:
    """msgspec's complaint as the rest of the API words it."""
    if what.startswith("Expected `str` matching regex"):
        return "must be a non-empty string"
    if what == "Expected `datetime` with a timezone component":
        return "has no zone; write Z or an offset such as +02:00"
    if what == "Invalid RFC3339 encoded datetime":
        return "not a valid time; write ISO 8601 (RFC 3339) with a zone, e.g. 2026-08-22T12:00:00Z"
    if what == "Number out of range":
        return "the number is out of range"
    bound = _BOUND.match(what)
    if bound is not None:
        op, limit, kind = _OPS[bound["op"]], _number(bound["limit"]), bound["type"]
        if bound["length"] and (op, limit) == ("≥", "1"):
            return "must not be empty"
        if bound["length"]:
            most = {"≤": "at most", "≥": "at least"}.get(op, op)
            return f"must hold {most} {limit} {_SIZED.get(kind, 'items')}"
        return f"must be {op} {limit}"
    expected = re.match(r"^Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`$", what)
    if expected is not None:
        got = "a number with a fraction" if expected["got"] == "float" else _words(expected["got"])
        return f"must be {_words(expected['want'])}, not {got}"
    return what[:1].lower() + what[1:]


def _first_bad_key(document: Any, steps: list[Step]) -> str:
    """The key of a header mapping (the requests' only open object) whose value msgspec refused."""
    headers = value_at(document, steps)
    for key, value in headers.items() if isinstance(headers, dict) else ():
        try:
            msgspec.convert(value, api.HeaderValue)
        except msgspec.ValidationError:
            return str(key)
    return "..."


def decode_error(exc: msgspec.ValidationError, document: Any, kind: Any) -> ApiError:
    """A 400 naming the field at fault, in the form `events[3].cost_usd: must be ≥ 0`."""
    what, steps = located(exc)
    if "..." in steps:
        at = steps.index("...")
        steps[at] = _first_bad_key(document, steps[:at])
    key = _KEY.match(what)
    if key is None:
        message = _reworded(what)
    elif key["kind"] == "missing required":
        message = "is required"
    else:
        message = unknown_key(kind, steps)
    field = field_path([*steps, key["key"]] if key else steps)
    return invalid(f"{field}: {message}" if field else f"the body {message}", field or None)


def decode(document: Any, kind: type[T]) -> T:
    """`document` (a parsed JSON body) as a `kind`, or a 400 naming the field."""
    try:
        return msgspec.convert(document, kind)
    except msgspec.ValidationError as exc:
        raise decode_error(exc, document, kind) from None


# --- times ------------------------------------------------------------------------------------

# Times outside this range are refused: their arithmetic (cooldowns, resets, formatting) overflows.
EARLIEST_MOMENT = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_MOMENT = datetime(2100, 1, 1, tzinfo=UTC)


def usable_time(when: datetime, field: str) -> datetime:
    """`when` in UTC if it lies within 2000-01-01..2100-01-01, else a 422 (the schema's date-time
    admits it; the ladder cannot use it: its arithmetic would overflow). In UTC because PostgreSQL
    refuses offsets beyond ±15:59 that ISO 8601 (and Python) allow, e.g. -18:31."""
    try:
        utc = when.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST_MOMENT <= utc <= LATEST_MOMENT:
        raise unprocessable(
            f"{field}: must lie between {EARLIEST_MOMENT.isoformat()} and {LATEST_MOMENT.isoformat()}",
            field,
            code="time_out_of_range",
        )
    return utc


def optional_time(when: datetime | msgspec.UnsetType, field: str) -> datetime | None:
    return None if isinstance(when, msgspec.UnsetType) else usable_time(when, field)


def moment(value: str, field: str) -> datetime:
    """A time of a query string: ISO 8601 with a zone (else a 400 naming the field), usable (else 422)."""
    try:
        when = datetime.fromisoformat(value)
    except (OverflowError, ValueError):
        raise invalid(
            f"{field}: {value!r} is not an ISO 8601 time, e.g. 2026-08-22T12:00:00Z", field
        ) from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise invalid(f"{field}: {value!r} has no zone; write Z or an offset such as +02:00", field)
    return usable_time(when, field)


def header_texts(headers: Mapping[str, api.HeaderValue]) -> dict[str, str]:
    """Header names to text: numbers written as text, a list joined with ", "."""
    return {
        name: ", ".join(value) if isinstance(value, list) else str(value) for name, value in headers.items()
    }


# --- the bodies -------------------------------------------------------------------------------


def check_auto_id(value: Any, field: str) -> None:
    """A 400 `invalid_model` unless `value` is an auto id of the grammar (DESIGN L13)."""
    try:
        parse_auto_id(value)
    except AutoIdError as exc:
        raise invalid(f"{field}: {exc}", field, code="invalid_model") from None


def resolve_input(document: Any) -> tuple[str, tuple[Candidate, ...] | None]:
    """The auto id and the candidates (None: built from the model catalog) of a resolve body."""
    request = decode(document, api.ResolveRequest)
    check_auto_id(request.model, "model")
    candidates = None
    if request.candidates is not None:
        candidates = tuple(
            Candidate(c.provider, c.model, c.connection_id, c.allowed_connection_ids)
            for c in request.candidates
        )
    return request.model, candidates


def _usage(event: api.UsageEvent, path: str) -> UsageInput:
    at = f"{path}.occurred_at" if path else "occurred_at"
    return UsageInput(
        request_id=event.request_id,
        connection_id=event.connection_id,
        model=event.model,
        input_tokens=event.input_tokens,
        output_tokens=event.output_tokens,
        cost_usd=None if event.cost_usd is None else quantize_usd(Decimal(str(event.cost_usd))),
        occurred_at=optional_time(event.occurred_at, at),
        path=path,
    )


def usage_input(document: Any) -> list[UsageInput]:
    """One event, or {"events": [...]} with 1 to 1,000 of them (more: 413)."""
    if isinstance(document, dict) and "events" in document:
        events = document["events"]
        if isinstance(events, list) and len(events) > api.MAX_EVENTS:
            raise ApiError(
                413,
                "too_many_events",
                f"events: at most {api.MAX_EVENTS} events per report (got {len(events)})",
                field="events",
            )
        batch = decode(document, api.UsageBatch)
        return [_usage(event, f"events[{index}]") for index, event in enumerate(batch.events)]
    return [_usage(decode(document, api.UsageEvent), "")]


def credential_input(document: Any, now: datetime) -> tuple[str, datetime, str | None]:
    """PUT /connections/{id}/credential: the token, its expiry (in the future) and its account.
    A bad value of a known field is a 422 naming it (API.md); a wrong shape or key stays a 400."""
    try:
        request = decode(document, api.CredentialRequest)
    except ApiError as error:
        if error.field in api.CredentialRequest.__struct_fields__ and "unknown key" not in error.message:
            raise unprocessable(error.message, error.field) from None
        raise
    token = request.access_token
    # The token goes into an Authorization header: surrounding blanks or control characters in it
    # would be a header injection, not a token.
    if token != token.strip() or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in token):
        raise unprocessable("access_token: no surrounding whitespace or control characters", "access_token")
    expires_at = usable_time(request.expires_at, "expires_at")
    if expires_at <= now:
        raise unprocessable("expires_at: the token has already expired", "expires_at")
    return token, expires_at, request.account_id


# --- the escalation log's query string --------------------------------------------------------

ESCALATION_QUERY_KEYS = ("auto_id", "since", "limit")
ESCALATIONS_DEFAULT_LIMIT = 100
ESCALATIONS_MAX_LIMIT = 1000


def _one_value(query: Mapping[str, list[str]], key: str) -> str | None:
    values = query.get(key) or []
    if len(values) > 1:
        raise invalid(f"{key}: give it once (got {len(values)} values)", key)
    return values[0] if values else None


def escalations_query(query: Mapping[str, list[str]]) -> tuple[str | None, datetime | None, int]:
    """The auto id, the time since and the limit of GET /api/v1/escalations's query string (each key
    to its list of values)."""
    for key in query:
        if key not in ESCALATION_QUERY_KEYS:
            accepted = ", ".join(ESCALATION_QUERY_KEYS)
            raise invalid(f"{key}: unknown query parameter; accepted: {accepted}", key)
    auto_id = _one_value(query, "auto_id")
    if auto_id is not None:
        check_auto_id(auto_id, "auto_id")
    since_text = _one_value(query, "since")
    since = None
    if since_text is not None:
        if " " in since_text.strip():
            raise invalid(
                f"since: {since_text!r} holds a space: write a + offset as %2B in a URL, or use Z", "since"
            )
        since = moment(since_text, "since")
    limit_text = _one_value(query, "limit")
    limit = ESCALATIONS_DEFAULT_LIMIT
    if limit_text is not None:
        whole = limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 6
        if not whole or not 1 <= int(limit_text) <= ESCALATIONS_MAX_LIMIT:
            raise invalid(f"limit: must be a whole number from 1 to {ESCALATIONS_MAX_LIMIT}", "limit")
        limit = int(limit_text)
    return auto_id, since, limit
