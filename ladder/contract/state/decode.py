"""The state file of STATE.md, decoded and validated in one call.

A file decodes and validates in one call, `msgspec.json.decode(raw, type=StateFile)`, straight into the
domain's value types. What msgspec cannot say, or says slowly, is checked after in one pass over the
values (`_settle`): times in UTC and within years 1970 to 9000, auth types normalised, names not blank
and ids of the documented characters, no `note` in a reading, the documented values of
`observed_overage`, and the keys the catalog, the models and the connections must not repeat. On 1,000
connections with two windows each the whole costs about 1.3x orjson.loads of the same bytes (decode
0.6x, the pass 0.5x; benchmarks/bench_domain.py's floor_ratio measures the offline resolver around it).

Only a refused file takes the slow road: Python's json reads it again, so that what json reads and
msgspec does not (NaN, 1e400) gets its field's message (``errors``), and what neither reads gets a
JSON message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson
from msgspec import UNSET
from msgspec.structs import force_setattr

from ladder.contract.fault import unknown_key
from ladder.contract.state.errors import (
    MESSAGES,
    TEXT_MESSAGE,
    StateError,
    choice_message,
    time_message,
    translate,
)
from ladder.contract.state.shapes import NOT_ON_THE_WIRE, State, StateFile
from ladder.domain.billing import normalise_auth_type
from ladder.domain.types import (
    CONNECTION_ID_CHARACTER,
    CatalogEntry,
    Connection,
    LadderConfig,
    Reading,
    Snapshot,
    Time,
    Window,
)

MIN_YEAR, MAX_YEAR = 1970, 9000
_EARLIEST = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
_LATEST = datetime(MAX_YEAR, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

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
        raise translate(exc, document) from None
    return _settle(file)


def parse_time(value: Any, path: str) -> datetime:
    """An ISO 8601 time with a zone, in UTC (e.g. `--now`)."""
    try:
        moment: datetime = msgspec.convert(value, Time)
    except msgspec.ValidationError:
        raise StateError(path, time_message(value)) from None
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
            raise StateError(f"connections[{i}].provider", TEXT_MESSAGE)
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
            raise StateError(f"connections[{i}].quota.note", unknown_key(Reading, hidden=NOT_ON_THE_WIRE))
        if reading.observed_overage == "unknown":
            raise StateError(
                f"connections[{i}].quota.observed_overage", choice_message("observed_overage", "unknown")
            )
        for j, window in enumerate(reading.windows):
            if window.name.isspace() or (window.scope_models and any(map(blank, window.scope_models))):
                _refuse_names(window, f"connections[{i}].quota.windows[{j}]")
            if window.exhausts_at is not None:  # the ladder's forecast, never a state file's input
                raise StateError(
                    f"connections[{i}].quota.windows[{j}].exhausts_at",
                    unknown_key(Window, hidden=NOT_ON_THE_WIRE),
                )
            moment = window.reset_at
            if moment is not None and not (moment.tzinfo is utc and earliest <= moment <= latest):
                path = f"connections[{i}].quota.windows[{j}].reset_at"
                force_setattr(window, "reset_at", _utc(moment, path))
    # One regular expression over every id at once (msgspec checked their lengths).
    if not _ID_TEXT.fullmatch("".join([c.id for c in connections])):
        for i, connection in enumerate(connections):
            if not _ID_TEXT.fullmatch(connection.id):
                raise StateError(f"connections[{i}].id", MESSAGES["connections.id"])


_ID_TEXT = re.compile(f"{CONNECTION_ID_CHARACTER}*")


def _refuse_names(window: Window, path: str) -> None:
    if window.name.isspace():
        raise StateError(f"{path}.name", TEXT_MESSAGE)
    index = next(k for k, scope in enumerate(window.scope_models) if scope.isspace())
    raise StateError(f"{path}.scope_models[{index}]", TEXT_MESSAGE)


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
