"""Request bodies of the gateway API → typed values. A wrong shape is a 400 naming the field
(`events[3].input_tokens`), with the offline state file's own parsers where they apply."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

from ladder.domain.autoid import AutoIdError, parse_auto_id
from ladder.domain.types import Candidate
from ladder.gateway.decorators import ApiError, invalid, unprocessable
from ladder.offline.statefile import StateError, parse_candidates, parse_time
from ladder.services.usage import MAX_COST_USD, MAX_EVENTS, UsageInput, quantize_usd

T = TypeVar("T")

MAX_TOKENS = 10**12
MAX_ID_CHARS = 200
MAX_HEADERS = 500


def is_number(value: Any) -> bool:
    """A JSON number: not a boolean, finite. (A huge integer is finite, never converted to float.)"""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _from_state_error(exc: StateError) -> ApiError:
    return invalid(str(exc), exc.path or None)


class Body:
    """A JSON object read field by field; keys outside `allowed` are refused (they would be ignored)."""

    def __init__(self, value: Any, path: str, allowed: Sequence[str]) -> None:
        if not isinstance(value, dict):
            raise invalid(f"{path or 'the body'}: must be a JSON object", path or None)
        for key in value:
            if key not in allowed:
                field = _join(path, key)
                raise invalid(f"{field}: unknown key; accepted: {', '.join(allowed)}", field)
        self.value = value
        self.path = path

    def field(self, key: str) -> str:
        return _join(self.path, key)

    def need(self, key: str, parse: Callable[[Any, str], T]) -> T:
        if key not in self.value:
            raise invalid(f"{self.field(key)}: is required", self.field(key))
        return parse(self.value[key], self.field(key))

    def get(self, key: str, parse: Callable[[Any, str], T], default: T) -> T:
        if key not in self.value or self.value[key] is None:
            return default
        return parse(self.value[key], self.field(key))


def text(value: Any, field: str, *, max_chars: int = MAX_ID_CHARS) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{field}: must be a non-empty string", field)
    if len(value) > max_chars:
        raise invalid(f"{field}: must be at most {max_chars} characters", field)
    return value


def whole_number(value: Any) -> int | None:
    """A JSON integer as JSON Schema reads one: 5 and 5.0 alike (JSON has one number type); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def count(value: Any, field: str) -> int:
    value = whole_number(value)
    if value is None:
        raise invalid(f"{field}: must be a whole number ≥ 0", field)
    if not 0 <= value <= MAX_TOKENS:
        raise invalid(f"{field}: must be between 0 and {MAX_TOKENS}", field)
    return value


def usd(value: Any, field: str) -> Decimal:
    if not is_number(value) or value < 0 or value > MAX_COST_USD:
        raise invalid(f"{field}: must be a number of USD between 0 and {MAX_COST_USD}", field)
    return quantize_usd(Decimal(str(value)))


def http_status(value: Any, field: str) -> int:
    status = whole_number(value)
    if status is None or not 100 <= status <= 599:
        raise invalid(f"{field}: must be an HTTP status code, a whole number from 100 to 599", field)
    return status


# Times outside this range are refused: their arithmetic (cooldowns, resets, formatting) overflows.
EARLIEST_MOMENT = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_MOMENT = datetime(2100, 1, 1, tzinfo=UTC)


def _well_formed_time(value: Any) -> datetime | None:
    """The time an ISO 8601 string with a zone names, whatever its year; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except (OverflowError, ValueError):
        return None
    return when if when.tzinfo is not None and when.utcoffset() is not None else None


def moment(value: Any, field: str) -> datetime:
    """An ISO 8601 time with a zone (else a 400 naming the field), within 2000-01-01..2100-01-01 UTC: a
    well-formed time outside that range is a 422 (the schema's date-time admits it; the ladder cannot
    use it: its arithmetic would overflow). Returned in UTC: PostgreSQL refuses offsets beyond ±15:59
    that ISO 8601 (and Python) allow, e.g. -18:31."""
    when = _well_formed_time(value)
    if when is None:
        try:
            parse_time(value, field)
        except StateError as exc:
            raise _from_state_error(exc) from None
        raise invalid(f"{field}: not a valid time", field)
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


def headers(value: Any, field: str) -> dict[str, str]:
    """Header names to values: strings (numbers are written as text; a list is joined with ", ")."""
    if not isinstance(value, dict):
        raise invalid(f"{field}: must be an object of header names to values", field)
    if len(value) > MAX_HEADERS:
        raise invalid(f"{field}: at most {MAX_HEADERS} headers", field)
    result: dict[str, str] = {}
    for name, item in value.items():
        where = f"{field}.{name}"
        if isinstance(item, str):
            result[name] = item
        elif is_number(item):
            result[name] = str(item)
        elif isinstance(item, list) and all(isinstance(part, str) for part in item):
            result[name] = ", ".join(item)
        else:
            raise invalid(f"{where}: a header value must be a string (or a list of strings)", where)
    return result


@dataclass(frozen=True)
class ResolveInput:
    model: Any  # checked by the domain's auto-id grammar (a 400 naming `model`)
    candidates: tuple[Candidate, ...] | None


def resolve_input(document: Any) -> ResolveInput:
    body = Body(document, "", ("model", "candidates"))
    if "model" not in body.value:
        raise invalid("model: is required, e.g. auto/thrifty", "model")
    try:
        candidates = parse_candidates(body.value.get("candidates"), "candidates")
    except StateError as exc:
        raise _from_state_error(exc) from None
    return ResolveInput(model=body.value["model"], candidates=candidates)


USAGE_KEYS = (
    "request_id",
    "connection_id",
    "model",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "occurred_at",
)


def usage_event(value: Any, path: str) -> UsageInput:
    body = Body(value, path, USAGE_KEYS)
    return UsageInput(
        request_id=body.need("request_id", text),
        connection_id=body.need("connection_id", text),
        model=body.need("model", text),
        input_tokens=body.get("input_tokens", count, 0),
        output_tokens=body.get("output_tokens", count, 0),
        cost_usd=body.get("cost_usd", usd, None),
        occurred_at=body.get("occurred_at", moment, None),
        path=path,
    )


def usage_input(document: Any) -> list[UsageInput]:
    """One event, or {"events": [...]} with 1 to 1,000 of them (more: 413)."""
    if isinstance(document, dict) and "events" in document:
        Body(document, "", ("events",))
        events = document["events"]
        if not isinstance(events, list):
            raise invalid("events: must be a list of usage events", "events")
        if not events:
            raise invalid("events: send at least one event", "events")
        if len(events) > MAX_EVENTS:
            raise ApiError(
                413,
                "too_many_events",
                f"events: at most {MAX_EVENTS} events per report (got {len(events)})",
                field="events",
            )
        return [usage_event(item, f"events[{index}]") for index, item in enumerate(events)]
    return [usage_event(document, "")]


@dataclass(frozen=True)
class ObservationInput:
    status: int | None
    headers: dict[str, str]
    observed_at: datetime | None


def observation_input(document: Any) -> ObservationInput:
    body = Body(document, "", ("status", "headers", "observed_at"))
    return ObservationInput(
        status=body.get("status", http_status, None),
        headers=body.need("headers", headers),
        observed_at=body.get("observed_at", moment, None),
    )


@dataclass(frozen=True)
class FailureInput:
    status: int
    headers: dict[str, str]
    body: object
    model: str | None
    observed_at: datetime | None


def failure_input(document: Any) -> FailureInput:
    body = Body(document, "", ("status", "headers", "body", "model", "observed_at"))
    return FailureInput(
        status=body.need("status", http_status),
        headers=body.get("headers", headers, {}),
        body=body.value.get("body"),
        model=body.get("model", text, None),
        observed_at=body.get("observed_at", moment, None),
    )


ESCALATION_QUERY_KEYS = ("auto_id", "since", "limit")
ESCALATIONS_DEFAULT_LIMIT = 100
ESCALATIONS_MAX_LIMIT = 1000


@dataclass(frozen=True)
class EscalationsQuery:
    auto_id: str | None
    since: datetime | None
    limit: int


def _one_value(query: Mapping[str, list[str]], key: str) -> str | None:
    values = query.get(key) or []
    if len(values) > 1:
        raise invalid(f"{key}: give it once (got {len(values)} values)", key)
    return values[0] if values else None


def escalations_query(query: Mapping[str, list[str]]) -> EscalationsQuery:
    """The query string of GET /api/v1/escalations (each key to its list of values)."""
    for key in query:
        if key not in ESCALATION_QUERY_KEYS:
            accepted = ", ".join(ESCALATION_QUERY_KEYS)
            raise invalid(f"{key}: unknown query parameter; accepted: {accepted}", key)
    auto_id = _one_value(query, "auto_id")
    if auto_id is not None:
        try:
            parse_auto_id(auto_id)
        except AutoIdError as exc:
            raise invalid(f"auto_id: {exc}", "auto_id", code="invalid_model") from None
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
    return EscalationsQuery(auto_id=auto_id, since=since, limit=limit)
