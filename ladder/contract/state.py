"""The offline state file of STATE.md, declared once: decoding with validation, and writing it back.

A file decodes and validates in one call, `msgspec.json.decode(raw, type=StateFile)`, straight into the
domain's value types (ladder.domain.types says why they are Structs). What msgspec cannot say, or
says slowly, is checked after in one pass over the values (`_settle`): times in UTC and within years
1970 to 9000, auth types normalised, names not blank and ids of the documented characters, no `note`
in a reading, the documented values of `observed_overage`, and the keys the catalog, the models and
the connections must not repeat. On 1,000 connections with two windows each the whole costs about
1.3x orjson.loads of the same bytes (decode 0.6x, the pass 0.5x; benchmarks/bench_domain.py's
floor_ratio measures the offline resolver around it).

Errors name the field by its path in STATE.md's form,
`connections[3].quota.windows[0].remaining_pct: must be between 0 and 100`, translated from msgspec's
`... - at $.connections[3].quota.windows[0].remaining_pct`. Only a refused file takes the slow road:
Python's json reads it again, so that what json reads and msgspec does not (NaN, 1e400) gets its
field's message, and what neither reads gets a JSON message.

No Django: the offline resolver, the state import and the gateway share it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
import orjson
from msgspec import UNSET, UnsetType
from msgspec.structs import force_setattr

from ladder.domain.billing import normalise_auth_type
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import (
    BILLINGS,
    BUDGET_PERIODS,
    BUDGET_RUNGS,
    CATEGORIES,
    CONNECTION_ID_CHARACTER,
    OVERAGES,
    POLL_INTERVAL_MAX_S,
    SOURCES,
    Amount,
    Billing,
    BudgetPeriod,
    Candidate,
    CatalogEntry,
    Connection,
    LadderConfig,
    ModelEntry,
    Overage,
    Pct,
    Reading,
    Snapshot,
    Text,
    Time,
    Window,
)

MIN_YEAR, MAX_YEAR = 1970, 9000
_EARLIEST = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
_LATEST = datetime(MAX_YEAR, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
# What an adapter can observe of overage: switched on, or seen off. "unknown" is no observation (null).
OBSERVED_OVERAGES = ("meters-to-paid", "hard-stop")
Positive = Annotated[float, msgspec.Meta(gt=0, le=1.7976931348623157e308)]


class StateError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class RungAmounts(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """Dollars per budget rung; a rung left out is absent (no budget, or $0 spent)."""

    cheap: Amount | UnsetType = UNSET
    premium: Amount | UnsetType = UNSET


class ConfigFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """DESIGN §3; a key left out takes its default (ladder.domain.types.LadderConfig)."""

    exit_cutoff_pct: Pct | UnsetType = UNSET
    reentry_min_remaining_pct: Pct | UnsetType = UNSET
    max_reading_age_s: Positive | UnsetType = UNSET
    rung_budget_usd: RungAmounts | UnsetType = UNSET
    budget_period: BudgetPeriod | UnsetType = UNSET
    free_max_input_usd_per_mtok: Amount | UnsetType = UNSET
    cheap_max_input_usd_per_mtok: Amount | UnsetType = UNSET
    refresh_interval_s: Positive | UnsetType = UNSET
    max_event_cost_usd: Amount | UnsetType = UNSET


class CatalogRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False, kw_only=True):
    """A catalog row as the file writes it (auth_type may be left out), then a CatalogEntry."""

    provider: Text
    auth_type: str | None = None
    billing: Billing
    overage: Overage
    source_url: Text | None = None
    notes: str | None = ""
    reviewed_at: Time | None = None


class RequestFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    model: str | None = None
    candidates: tuple[Candidate, ...] | None = None


class StateFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    now: Time | None = None
    config: ConfigFile | UnsetType = UNSET
    billing_catalog: tuple[CatalogRow, ...] = ()
    models: tuple[ModelEntry, ...] = ()
    connections: tuple[Connection, ...] = ()
    spend_usd: RungAmounts | UnsetType = UNSET
    request: RequestFile | UnsetType = UNSET


@dataclass(frozen=True)
class State:
    snapshot: Snapshot
    now: datetime | None
    model: str | None
    candidates: tuple[Candidate, ...] | None
    # The configuration keys the file gives (None: no config object), for the state import.
    config_given: dict[str, Any] | None = None


_DECODER = msgspec.json.Decoder(StateFile)


def decode_state(raw: bytes | str) -> State:
    """A state file's JSON text → State, or StateError naming the field."""
    try:
        file = _DECODER.decode(raw)
    except msgspec.DecodeError:  # ValidationError too: the slow road finds the words
        return parse_state(load_json_text(raw))
    return _settle(file)


def parse_state(document: Any) -> State:
    """A state file already read as JSON values (dicts, lists…) → State, or StateError."""
    try:
        file = msgspec.convert(document, StateFile)
    except msgspec.ValidationError as exc:
        raise _translate(exc, document) from None
    return _settle(file)


def parse_time(value: Any, path: str) -> datetime:
    """An ISO 8601 time with a zone, in UTC (e.g. `--now`)."""
    try:
        moment: datetime = msgspec.convert(value, Time)
    except msgspec.ValidationError:
        raise StateError(path, _time_message(value)) from None
    return _utc(moment, path)


def load_json_text(raw: bytes | str) -> Any:
    """JSON values of a text as Python's json reads them (NaN, 1e400 included: the field refuses them)."""
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise StateError("", f"not UTF-8 text (byte {exc.start})") from None
    try:
        return orjson.loads(text)  # a few times faster than json on a large state
    except orjson.JSONDecodeError:
        pass  # what orjson refuses (NaN, numbers past a double, lone surrogates, deep nesting): json decides
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StateError("", f"not valid JSON: {exc}") from None
    except RecursionError:
        raise StateError("", "not accepted: JSON nested too deeply") from None


# --- what msgspec cannot say --------------------------------------------------------------------------


def _utc(moment: datetime, path: str) -> datetime:
    """The same instant in UTC (PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 allows), far
    enough from datetime's limits that UTC conversion and the next budget period exist."""
    try:
        utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not _EARLIEST <= utc <= _LATEST:
        raise StateError(
            path, f"{moment.isoformat()!r} is out of range; accepted: years {MIN_YEAR} to {MAX_YEAR}"
        )
    return utc


def _settle(file: StateFile) -> State:
    """The checks msgspec cannot express, in one pass; values are fixed in place (they were just
    decoded, nothing else holds them)."""
    catalog = tuple(
        CatalogEntry(
            row.provider,
            normalise_auth_type(row.auth_type),
            row.billing,
            row.overage,
            row.source_url,
            row.notes or "",
            None if row.reviewed_at is None else _utc(row.reviewed_at, f"billing_catalog[{i}].reviewed_at"),
        )
        for i, row in enumerate(file.billing_catalog)
    )
    _unique(((e.provider, e.auth_type) for e in catalog), "billing_catalog", "provider and auth_type")
    _unique(((m.provider, m.model) for m in file.models), "models", "provider and model")
    connections = file.connections
    _settle_connections(connections)
    if len({c.id for c in connections}) != len(connections):
        _unique((c.id for c in connections), "connections", "connection id")
    config = file.config
    given = None if config is UNSET else _given(config)
    spend = {} if file.spend_usd is UNSET else _given(file.spend_usd)
    request = file.request
    snapshot = Snapshot(
        config=LadderConfig(**given) if given else LadderConfig(),
        billing_catalog=catalog,
        models=file.models,
        connections=connections,
        spend_usd=spend,
    )
    return State(
        snapshot=snapshot,
        now=None if file.now is None else _utc(file.now, "now"),
        model=None if request is UNSET else request.model,
        candidates=None if request is UNSET else request.candidates,
        config_given=given,
    )


def _settle_connections(connections: tuple[Connection, ...]) -> None:
    """The connections' checks, in one loop over thousands of values: each line here costs. Names are
    checked for blankness here and ids for their characters (ladder.domain.types.Name): a pattern in
    the Structs would cost msgspec a Python call per string, most of the decode's time."""
    utc, earliest, latest, normal_auth, blank = UTC, _EARLIEST, _LATEST, normalise_auth_type, str.isspace
    for i, connection in enumerate(connections):
        if connection.provider.isspace():
            raise StateError(f"connections[{i}].provider", _TEXT)
        auth_type = connection.auth_type
        if auth_type is not None and (normal := normal_auth(auth_type)) != auth_type:
            force_setattr(connection, "auth_type", normal)
        moment = connection.cooldown_until
        if moment is not None and not (moment.tzinfo is utc and earliest <= moment <= latest):
            force_setattr(connection, "cooldown_until", _utc(moment, f"connections[{i}].cooldown_until"))
        reading = connection.reading
        if reading is None:
            continue
        moment = reading.fetched_at
        if not (moment.tzinfo is utc and earliest <= moment <= latest):
            force_setattr(reading, "fetched_at", _utc(moment, f"connections[{i}].quota.fetched_at"))
        if reading.note:
            raise StateError(f"connections[{i}].quota.note", _unknown_key("quota"))
        if reading.observed_overage == "unknown":
            raise StateError(
                f"connections[{i}].quota.observed_overage", _choice_message("observed_overage", "unknown")
            )
        for j, window in enumerate(reading.windows):
            if window.name.isspace() or (window.scope_models and any(map(blank, window.scope_models))):
                _refuse_names(window, f"connections[{i}].quota.windows[{j}]")
            if window.exhausts_at is not None:  # the ladder's forecast, never a state file's input
                raise StateError(f"connections[{i}].quota.windows[{j}].exhausts_at", _unknown_key("windows"))
            moment = window.reset_at
            if moment is not None and not (moment.tzinfo is utc and earliest <= moment <= latest):
                path = f"connections[{i}].quota.windows[{j}].reset_at"
                force_setattr(window, "reset_at", _utc(moment, path))
    # One regular expression over every id at once (msgspec checked their lengths).
    if not _ID_TEXT.fullmatch("".join([c.id for c in connections])):
        for i, connection in enumerate(connections):
            if not _ID_TEXT.fullmatch(connection.id):
                raise StateError(f"connections[{i}].id", _MESSAGES["connections.id"])


_ID_TEXT = re.compile(f"{CONNECTION_ID_CHARACTER}*")


def _refuse_names(window: Window, path: str) -> None:
    if window.name.isspace():
        raise StateError(f"{path}.name", _TEXT)
    index = next(k for k, scope in enumerate(window.scope_models) if scope.isspace())
    raise StateError(f"{path}.scope_models[{index}]", _TEXT)


def _given(shape: msgspec.Struct) -> dict[str, Any]:
    """The fields a file gave, nested shapes as dicts."""
    return {
        name: _given(value) if isinstance(value, msgspec.Struct) else value
        for name in shape.__struct_fields__
        if (value := getattr(shape, name)) is not UNSET
    }


def _unique(keys: Iterable[object], path: str, what: str) -> None:
    seen: dict[object, int] = {}
    for index, key in enumerate(keys):
        if key in seen:
            raise StateError(f"{path}[{index}]", f"duplicate {what} (same as {path}[{seen[key]}])")
        seen[key] = index


# --- msgspec's errors in STATE.md's words ----------------------------------------------------------------

_AT = re.compile(r"(?P<message>.*?)(?: - at `\$(?P<path>.*)`)?", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<key>.*)`", re.S)
_MISSING = re.compile(r"Object missing required field `(?P<key>.*)`", re.S)

# The object a key names: its accepted keys are that Struct's (wire) field names.
_SHAPE_OF: dict[str, type[msgspec.Struct]] = {
    "": StateFile,
    "config": ConfigFile,
    "rung_budget_usd": RungAmounts,
    "spend_usd": RungAmounts,
    "billing_catalog": CatalogRow,
    "models": ModelEntry,
    "connections": Connection,
    "quota": Reading,
    "windows": Window,
    "request": RequestFile,
    "candidates": Candidate,
}
# Reading's note is the adapters', a window's exhausts_at the ladder's forecast (ladder.domain.types).
_NOT_ON_THE_WIRE = frozenset({"note", "exhausts_at"})

_TEXT = "must be a non-empty string"
_PCT = "must be between 0 and 100"
# By field name (or parent.name, or name[] for a list's items), its message whatever msgspec said.
_MESSAGES: dict[str, str] = {
    "remaining_pct": _PCT,
    "reserve_pct": _PCT,
    "poll_interval_s": f"must be a number of seconds above 0 and at most {POLL_INTERVAL_MAX_S:g}, or null",
    "connections.id": "must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'",
    **dict.fromkeys(
        ("provider", "model", "name", "disabled_reason", "base_url", "source_url", "connection_id"), _TEXT
    ),
    **dict.fromkeys(("scope_models[]", "models[]", "allowed_connection_ids[]"), _TEXT),
    "request.model": "must be a string",
    "auth_type": "must be a string or null",
    "notes": "must be a string",
    "input_usd_per_mtok": "must be a number ≥ 0 or null",
    "output_usd_per_mtok": "must be a number ≥ 0 or null",
    **dict.fromkeys(("keyless", "enabled", "free", "verifiable", "latched"), "must be true or false"),
    "exit_cutoff_pct": "must be a number between 0 and 100",
    "reentry_min_remaining_pct": "must be a number between 0 and 100",
    "max_reading_age_s": "must be a positive number",
    "refresh_interval_s": "must be a positive number",
    "max_event_cost_usd": "must be a number ≥ 0",
    "free_max_input_usd_per_mtok": "must be a number ≥ 0",
    "cheap_max_input_usd_per_mtok": "must be a number ≥ 0",
    "rung_budget_usd.cheap": "must be a number ≥ 0 (0 disables the rung)",
    "rung_budget_usd.premium": "must be a number ≥ 0 (0 disables the rung)",
    "spend_usd.cheap": "must be a number ≥ 0",
    "spend_usd.premium": "must be a number ≥ 0",
}
_CHOICES: dict[str, tuple[tuple[str, ...], bool]] = {
    "billing": (BILLINGS, False),
    "overage": (OVERAGES, False),
    "overage_override": (OVERAGES, True),
    "source": (SOURCES, False),
    "observed_overage": (OBSERVED_OVERAGES, True),
    "budget_period": (BUDGET_PERIODS, False),
    "categories[]": (CATEGORIES, False),
}
_TIMES = frozenset(("now", "reviewed_at", "cooldown_until", "fetched_at", "reset_at"))


def _translate(exc: msgspec.ValidationError, document: Any, prefix: str = "") -> StateError:
    found = _AT.fullmatch(str(exc))
    assert found is not None  # the pattern matches any text
    said, at = found["message"], found["path"] or ""
    steps: list[str | int] = [name if name else int(index) for name, index in _STEP.findall(at)]
    path = _path(prefix, steps)
    if key := _UNKNOWN.fullmatch(said):
        return StateError(_path(path, [key["key"]]), _unknown_key(_last_name(prefix, steps)))
    if key := _MISSING.fullmatch(said):
        return StateError(_path(path, [key["key"]]), "is required")
    return StateError(path, _message(prefix, steps, said, _value_at(document, steps)))


def _path(prefix: str, steps: list[str | int]) -> str:
    path = prefix
    for step in steps:
        path = f"{path}[{step}]" if isinstance(step, int) else f"{path}.{step}" if path else step
    return path


def _last_name(prefix: str, steps: list[str | int]) -> str:
    names = [step for step in steps if isinstance(step, str)]
    return names[-1] if names else prefix.rsplit(".", 1)[-1]


def _unknown_key(shape_name: str) -> str:
    shape = _SHAPE_OF.get(shape_name)
    if shape is None:
        return "unknown key"
    accepted = [f.encode_name for f in msgspec.structs.fields(shape) if f.encode_name not in _NOT_ON_THE_WIRE]
    return f"unknown key; accepted: {', '.join(accepted)}"


def _message(prefix: str, steps: list[str | int], said: str, value: Any) -> str:
    names = [prefix.rsplit(".", 1)[-1], *(step for step in steps if isinstance(step, str))]
    name = names[-1]
    item = bool(steps) and isinstance(steps[-1], int)
    key = f"{name}[]" if item else name
    if said.startswith("Expected `object"):
        return "must be an object"
    if said.startswith("Expected `array") and not item:
        return "must be a list"
    if key in _TIMES:
        return _time_message(value)
    if key in _CHOICES:
        return _choice_message(key, value)
    parent = names[-2] if len(names) > 1 else ""
    return _MESSAGES.get(f"{parent}.{key}") or _MESSAGES.get(key) or said[:1].lower() + said[1:]


def _choice_message(key: str, value: Any) -> str:
    choices, nullable = _CHOICES[key]
    accepted = ", ".join(choices) + (", or null" if nullable else "")
    if key == "categories[]":
        return f"{value!r} is not a category; accepted: {accepted}"
    return f"{value!r} is not accepted; accepted: {accepted}"


def _time_message(value: Any) -> str:
    if not isinstance(value, str):
        return "must be an ISO 8601 time with a zone, e.g. 2026-08-22T12:00:00Z"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not an ISO 8601 time"
    if moment.utcoffset() is None:
        return f"{value!r} has no zone; write Z or an offset such as +02:00"
    return f"{value!r} is not accepted; write it as 2026-08-22T12:00:00Z or with an offset such as +02:00"


def _value_at(document: Any, steps: list[str | int]) -> Any:
    for step in steps:
        try:
            document = document[step]
        except (KeyError, IndexError, TypeError):
            return None
    return document


# --- writing ---------------------------------------------------------------------------------------------


def config_to_dict(config: LadderConfig) -> dict[str, Any]:
    return {
        "exit_cutoff_pct": config.exit_cutoff_pct,
        "reentry_min_remaining_pct": config.reentry_min_remaining_pct,
        "max_reading_age_s": config.max_reading_age_s,
        "rung_budget_usd": dict(config.rung_budget_usd),
        "budget_period": config.budget_period,
        "free_max_input_usd_per_mtok": config.free_max_input_usd_per_mtok,
        "cheap_max_input_usd_per_mtok": config.cheap_max_input_usd_per_mtok,
        "refresh_interval_s": config.refresh_interval_s,
        "max_event_cost_usd": config.max_event_cost_usd,
    }


def reading_to_dict(reading: Reading | None) -> dict[str, Any] | None:
    if reading is None:
        return None
    return {
        "fetched_at": format_utc(reading.fetched_at),
        "source": reading.source,
        "verifiable": reading.verifiable,
        "observed_overage": reading.observed_overage,
        "windows": [
            {
                "name": w.name,
                "remaining_pct": w.remaining_pct,
                "reset_at": format_utc_or_none(w.reset_at),
                "scope_models": list(w.scope_models),
                "latched": w.latched,
            }
            for w in reading.windows
        ],
    }


def _struct_to_dict(value: msgspec.Struct, convert: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    return {
        f.encode_name: convert.get(f.name, _plain)(getattr(value, f.name))
        for f in msgspec.structs.fields(value)
        if f.encode_name not in _NOT_ON_THE_WIRE
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def state_to_dict(snapshot: Snapshot, now: datetime) -> dict[str, Any]:
    """Every key explicit (defaults never drift); never a credential (the snapshot holds none)."""
    times = {"reviewed_at": format_utc_or_none, "cooldown_until": format_utc_or_none}
    return {
        "now": format_utc(now),
        "config": config_to_dict(snapshot.config),
        "billing_catalog": [_struct_to_dict(e, times) for e in snapshot.billing_catalog],
        "models": [_struct_to_dict(m, {}) for m in snapshot.models],
        "connections": [
            _struct_to_dict(c, {**times, "reading": reading_to_dict}) for c in snapshot.connections
        ],
        "spend_usd": {rung: float(snapshot.spend_usd.get(rung, 0.0)) for rung in BUDGET_RUNGS},
        "request": {"model": "auto/thrifty", "candidates": None},
    }
