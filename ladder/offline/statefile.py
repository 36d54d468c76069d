"""The offline state file of STATE.md: strict parsing into domain values, and writing it back.

Pure Python (no Django) so that the offline resolver, the importer and the exporter share it.
Every error names the field by its path, e.g. `connections[3].quota.windows[0].remaining_pct`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from ladder.domain.billing import normalise_auth_type
from ladder.domain.config import CONFIG_FIELDS, build_config, config_errors, is_number
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import (
    BILLINGS,
    BUDGET_RUNGS,
    CATEGORIES,
    OVERAGES,
    SOURCES,
    Candidate,
    CatalogEntry,
    Connection,
    ModelEntry,
    Reading,
    Snapshot,
    Window,
    slot_builder,
)
from ladder.domain.windows import POLL_INTERVAL_MAX_S

# What an adapter can observe of overage: switched on, or seen off. "unknown" is no observation (null).
OBSERVED_OVERAGES = ("meters-to-paid", "hard-stop")
CONNECTION_ID_RE = re.compile(r"\A[A-Za-z0-9._:-]{1,64}\Z")
T = TypeVar("T")


class StateError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class State:
    snapshot: Snapshot
    now: datetime | None
    model: str | None
    candidates: tuple[Candidate, ...] | None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class _Obj:
    """A JSON object read field by field; leftover keys are errors."""

    def __init__(self, value: Any, path: str, allowed: Sequence[str]) -> None:
        if not isinstance(value, dict):
            raise StateError(path, "must be an object")
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise StateError(_join(path, unknown[0]), f"unknown key; accepted: {', '.join(allowed)}")
        self.value = value
        self.path = path

    def has(self, key: str) -> bool:
        return key in self.value

    def get(self, key: str, parse: Callable[[Any, str], T], default: T) -> T:
        if key not in self.value:
            return default
        return parse(self.value[key], _join(self.path, key))

    def need(self, key: str, parse: Callable[[Any, str], T]) -> T:
        if key not in self.value:
            raise StateError(_join(self.path, key), "is required")
        return parse(self.value[key], _join(self.path, key))


# The keys a state file may give, in STATE.md's order (the careful parser's "accepted:" lists them;
# the fast path checks against the same keys as sets).
WINDOW_KEYS = ("name", "remaining_pct", "reset_at", "scope_models", "latched")
READING_KEYS = ("fetched_at", "source", "verifiable", "observed_overage", "windows")
CONNECTION_KEYS = (
    "id",
    "provider",
    "auth_type",
    "keyless",
    "enabled",
    "disabled_reason",
    "base_url",
    "cooldown_until",
    "overage_override",
    "poll_interval_s",
    "reserve_pct",
    "models",
    "quota",
)


def parse_time(value: Any, path: str) -> datetime:
    if not isinstance(value, str):
        raise StateError(path, "must be an ISO 8601 time with a zone, e.g. 2026-08-22T12:00:00Z")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise StateError(path, f"{value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise StateError(path, f"{value!r} has no zone; write Z or an offset such as +02:00")
    if not _in_range(moment):
        raise StateError(path, f"{value!r} is out of range; accepted: years {MIN_YEAR} to {MAX_YEAR}")
    return _utc(moment)


def _utc(moment: datetime) -> datetime:
    """The same instant in UTC: PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 allows."""
    return moment if moment.tzinfo is UTC else moment.astimezone(UTC)


MIN_YEAR, MAX_YEAR = 1970, 9000


def _in_range(moment: datetime) -> bool:
    """Far enough from datetime's limits that UTC conversion and the next budget period exist."""
    try:
        return MIN_YEAR <= moment.astimezone(UTC).year <= MAX_YEAR
    except OverflowError:
        return False


def parse_optional_time(value: Any, path: str) -> datetime | None:
    return None if value is None else parse_time(value, path)


def parse_str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise StateError(path, "must be a non-empty string")
    return value


def parse_text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise StateError(path, "must be a string")
    return value


def parse_optional_str(value: Any, path: str) -> str | None:
    return None if value is None else parse_str(value, path)


def parse_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise StateError(path, "must be true or false")
    return value


def parse_price(value: Any, path: str) -> float | None:
    if value is None:
        return None
    if not is_number(value) or value < 0:
        raise StateError(path, "must be a number ≥ 0 or null")
    return float(value)


def parse_pct(value: Any, path: str) -> float:
    if not is_number(value) or not 0 <= value <= 100:
        raise StateError(path, "must be between 0 and 100")
    return float(value)


def parse_optional_pct(value: Any, path: str) -> float | None:
    return None if value is None else parse_pct(value, path)


def parse_poll_interval(value: Any, path: str) -> float | None:
    if value is None:
        return None
    if not is_number(value) or not 0 < value <= POLL_INTERVAL_MAX_S:
        raise StateError(
            path, f"must be a number of seconds above 0 and at most {POLL_INTERVAL_MAX_S:g}, or null"
        )
    return float(value)


def _choice(choices: Sequence[str], nullable: bool) -> Callable[[Any, str], Any]:
    def parse(value: Any, path: str) -> Any:
        if value is None and nullable:
            return None
        if value not in choices:
            accepted = ", ".join(choices) + (", or null" if nullable else "")
            raise StateError(path, f"{value!r} is not accepted; accepted: {accepted}")
        return value

    return parse


def _list(item: Callable[[Any, str], T]) -> Callable[[Any, str], list[T]]:
    def parse(value: Any, path: str) -> list[T]:
        if not isinstance(value, list):
            raise StateError(path, "must be a list")
        return [item(v, _join(path, i)) for i, v in enumerate(value)]

    return parse


def parse_connection_id(value: Any, path: str) -> str:
    if not isinstance(value, str) or not CONNECTION_ID_RE.match(value):
        raise StateError(path, "must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'")
    return value


def parse_auth_type(value: Any, path: str) -> str | None:
    if value is None:
        return None
    return normalise_auth_type(parse_text(value, path))


def parse_category(value: Any, path: str) -> str:
    if value not in CATEGORIES:
        raise StateError(path, f"{value!r} is not a category; accepted: {', '.join(CATEGORIES)}")
    return str(value)


def parse_config(value: Any, path: str) -> dict[str, Any]:
    obj = _Obj(value, path, CONFIG_FIELDS)
    errors = config_errors(obj.value)
    if errors:
        field, message = next(iter(errors.items()))
        raise StateError(_join(path, field), message)
    return dict(obj.value)


def parse_catalog_entry(value: Any, path: str) -> CatalogEntry:
    obj = _Obj(
        value, path, ("provider", "auth_type", "billing", "overage", "source_url", "notes", "reviewed_at")
    )
    return CatalogEntry(
        provider=obj.need("provider", parse_str),
        auth_type=obj.get("auth_type", parse_auth_type, None),
        billing=obj.need("billing", _choice(BILLINGS, False)),
        overage=obj.need("overage", _choice(OVERAGES, False)),
        source_url=obj.get("source_url", parse_optional_str, None),
        notes=obj.get("notes", lambda v, p: "" if v is None else parse_text(v, p), ""),
        reviewed_at=obj.get("reviewed_at", parse_optional_time, None),
    )


def parse_model_entry(value: Any, path: str) -> ModelEntry:
    obj = _Obj(
        value, path, ("provider", "model", "input_usd_per_mtok", "output_usd_per_mtok", "free", "categories")
    )
    return ModelEntry(
        provider=obj.need("provider", parse_str),
        model=obj.need("model", parse_str),
        input_usd_per_mtok=obj.get("input_usd_per_mtok", parse_price, None),
        output_usd_per_mtok=obj.get("output_usd_per_mtok", parse_price, None),
        free=obj.get("free", parse_bool, False),
        categories=tuple(obj.get("categories", _list(parse_category), [])),
    )


def parse_window(value: Any, path: str) -> Window:
    obj = _Obj(value, path, WINDOW_KEYS)
    return Window(
        name=obj.need("name", parse_str),
        remaining_pct=obj.need("remaining_pct", parse_pct),
        reset_at=obj.get("reset_at", parse_optional_time, None),
        scope_models=tuple(obj.get("scope_models", _list(parse_str), [])),
        latched=obj.get("latched", parse_bool, False),
    )


def parse_reading(value: Any, path: str) -> Reading | None:
    if value is None:
        return None
    obj = _Obj(value, path, READING_KEYS)
    return Reading(
        fetched_at=obj.need("fetched_at", parse_time),
        source=obj.get("source", _choice(SOURCES, False), "poll"),
        verifiable=obj.get("verifiable", parse_bool, True),
        observed_overage=obj.get("observed_overage", _choice(OBSERVED_OVERAGES, True), None),
        windows=tuple(obj.get("windows", _list(parse_window), [])),
    )


def parse_connection(value: Any, path: str) -> Connection:
    obj = _Obj(value, path, CONNECTION_KEYS)
    models = obj.get("models", lambda v, p: None if v is None else tuple(_list(parse_str)(v, p)), None)
    return Connection(
        id=obj.need("id", parse_connection_id),
        provider=obj.need("provider", parse_str),
        auth_type=obj.get("auth_type", parse_auth_type, None),
        keyless=obj.get("keyless", parse_bool, False),
        enabled=obj.get("enabled", parse_bool, True),
        disabled_reason=obj.get("disabled_reason", parse_optional_str, None),
        base_url=obj.get("base_url", parse_optional_str, None),
        cooldown_until=obj.get("cooldown_until", parse_optional_time, None),
        overage_override=obj.get("overage_override", _choice(OVERAGES, True), None),
        models=models,
        reading=obj.get("quota", parse_reading, None),
        poll_interval_s=obj.get("poll_interval_s", parse_poll_interval, None),
        reserve_pct=obj.get("reserve_pct", parse_optional_pct, None),
    )


class _Slow(Exception):
    """The fast path met something it does not accept; the careful parser gives the verdict."""


_WINDOW_KEYS = frozenset(WINDOW_KEYS)
_READING_KEYS = frozenset(READING_KEYS)
_CONNECTION_KEYS = frozenset(CONNECTION_KEYS)


# Field values in field order (ladder.domain.types.slot_builder); the fast path's property tests compare
# each result with the careful parser's, built by keyword, so an order that drifts fails them.
_build_window = slot_builder(Window)
_build_reading = slot_builder(Reading)
_build_connection = slot_builder(Connection)


def _fast_time(value: Any, cache: dict[str, datetime]) -> datetime:
    if type(value) is not str:
        raise _Slow
    moment = cache.get(value)
    if moment is None:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise _Slow from None
        if moment.utcoffset() is None or not _in_range(moment):
            raise _Slow
        moment = cache[value] = _utc(moment)
    return moment


def _fast_optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is not str or not value.strip():
        raise _Slow
    return value


def _fast_str_tuple(value: Any) -> tuple[str, ...]:
    if type(value) is not list:
        raise _Slow
    for item in value:
        if type(item) is not str or not item.strip():
            raise _Slow
    return tuple(value)


def _fast_window(value: Any, cache: dict[str, datetime]) -> Window:
    if type(value) is not dict or not _WINDOW_KEYS.issuperset(value):
        raise _Slow
    get = value.get
    name = get("name")
    pct = get("remaining_pct")
    if type(name) is not str or not name.strip():
        raise _Slow
    if type(pct) is int:
        pct = float(pct)
    if type(pct) is not float or not 0.0 <= pct <= 100.0:
        raise _Slow
    reset = get("reset_at")
    latched = get("latched", False)
    if type(latched) is not bool:
        raise _Slow
    scope = get("scope_models")
    if scope is not None:
        scope = _fast_str_tuple(scope)
    elif "scope_models" in value:
        raise _Slow  # null where a list is expected: the careful parser names it
    else:
        scope = ()
    if reset is not None:
        reset = _fast_time(reset, cache)
    return _build_window(name, pct, reset, scope, latched)


def _fast_reading(value: Any, cache: dict[str, datetime]) -> Reading | None:
    if value is None:
        return None
    if type(value) is not dict or not _READING_KEYS.issuperset(value):
        raise _Slow
    get = value.get
    source = get("source", "poll")
    verifiable = get("verifiable", True)
    observed = get("observed_overage")
    windows = get("windows", [])
    if source not in SOURCES or type(verifiable) is not bool or type(windows) is not list:
        raise _Slow
    if observed is not None and observed not in OBSERVED_OVERAGES:
        raise _Slow
    return _build_reading(
        _fast_time(get("fetched_at"), cache),
        tuple([_fast_window(w, cache) for w in windows]),
        source,
        verifiable,
        observed,
        "",  # note
    )


def _fast_connection(value: Any, cache: dict[str, datetime]) -> Connection:
    if type(value) is not dict or not _CONNECTION_KEYS.issuperset(value):
        raise _Slow
    get = value.get
    connection_id = get("id")
    provider = get("provider")
    if type(connection_id) is not str or not CONNECTION_ID_RE.match(connection_id):
        raise _Slow
    if type(provider) is not str or not provider.strip():
        raise _Slow
    auth_type = get("auth_type")
    if auth_type is not None:
        if type(auth_type) is not str:
            raise _Slow
        auth_type = normalise_auth_type(auth_type)
    keyless = get("keyless", False)
    enabled = get("enabled", True)
    if type(keyless) is not bool or type(enabled) is not bool:
        raise _Slow
    override = get("overage_override")
    if override is not None and override not in OVERAGES:
        raise _Slow
    # Most connections leave these out: each is checked only when given.
    disabled_reason = get("disabled_reason")
    if disabled_reason is not None:
        disabled_reason = _fast_optional_str(disabled_reason)
    base_url = get("base_url")
    if base_url is not None:
        base_url = _fast_optional_str(base_url)
    cooldown = get("cooldown_until")
    if cooldown is not None:
        cooldown = _fast_time(cooldown, cache)
    models = get("models")
    if models is not None:
        models = _fast_str_tuple(models)
    poll_interval = get("poll_interval_s")
    if poll_interval is not None:
        if type(poll_interval) is int:
            poll_interval = float(poll_interval)
        if type(poll_interval) is not float or not 0.0 < poll_interval <= POLL_INTERVAL_MAX_S:
            raise _Slow
    reserve = get("reserve_pct")
    if reserve is not None:
        if type(reserve) is int:
            reserve = float(reserve)
        if type(reserve) is not float or not 0.0 <= reserve <= 100.0:
            raise _Slow
    quota = get("quota")
    return _build_connection(
        connection_id,
        provider,
        auth_type,
        keyless,
        enabled,
        disabled_reason,
        base_url,
        cooldown,
        override,
        models,
        None if quota is None else _fast_reading(quota, cache),
        poll_interval,
        reserve,
    )


def parse_connections(value: Any, path: str) -> list[Connection]:
    """Connections are most of a large state: a fast path, and the careful parser for any doubt."""
    if not isinstance(value, list):
        raise StateError(path, "must be a list")
    cache: dict[str, datetime] = {}
    connections = []
    for index, item in enumerate(value):
        try:
            connections.append(_fast_connection(item, cache))
        except (_Slow, OverflowError):
            connections.append(parse_connection(item, _join(path, index)))
    return connections


def parse_spend(value: Any, path: str) -> dict[str, float]:
    obj = _Obj(value, path, BUDGET_RUNGS)
    spend = {}
    for rung in BUDGET_RUNGS:
        if obj.has(rung):
            amount = obj.value[rung]
            if not is_number(amount) or amount < 0:
                raise StateError(_join(path, rung), "must be a number ≥ 0")
            spend[rung] = float(amount)
    return spend


def parse_candidate(value: Any, path: str) -> Candidate:
    obj = _Obj(value, path, ("provider", "model", "connection_id", "allowed_connection_ids"))
    return Candidate(
        provider=obj.need("provider", parse_str),
        model=obj.need("model", parse_str),
        connection_id=obj.get("connection_id", lambda v, p: None if v is None else parse_str(v, p), None),
        allowed_connection_ids=tuple(obj.get("allowed_connection_ids", _list(parse_str), [])),
    )


def parse_candidates(value: Any, path: str) -> tuple[Candidate, ...] | None:
    if value is None:
        return None
    return tuple(_list(parse_candidate)(value, path))


def _unique(items: Sequence[T], key: Callable[[T], object], path: str, what: str) -> None:
    keys = [key(item) for item in items]
    if len(set(keys)) == len(keys):
        return
    seen: dict[object, int] = {}
    for index, k in enumerate(keys):
        if k in seen:
            raise StateError(_join(path, index), f"duplicate {what} (same as {_join(path, seen[k])})")
        seen[k] = index


def parse_state(data: Any) -> State:
    top = _Obj(
        data, "", ("now", "config", "billing_catalog", "models", "connections", "spend_usd", "request")
    )
    config = build_config(top.get("config", parse_config, {}))
    catalog: list[CatalogEntry] = top.get("billing_catalog", _list(parse_catalog_entry), [])
    _unique(catalog, lambda e: (e.provider, e.auth_type), "billing_catalog", "provider and auth_type")
    models: list[ModelEntry] = top.get("models", _list(parse_model_entry), [])
    _unique(models, lambda m: (m.provider, m.model), "models", "provider and model")
    connections: list[Connection] = top.get("connections", parse_connections, [])
    _unique(connections, lambda c: c.id, "connections", "connection id")
    spend: dict[str, float] = top.get("spend_usd", parse_spend, {})
    model: str | None = None
    candidates: tuple[Candidate, ...] | None = None
    if top.has("request"):
        request = _Obj(top.value["request"], "request", ("model", "candidates"))
        model = request.get("model", lambda v, p: None if v is None else parse_text(v, p), None)
        candidates = request.get("candidates", parse_candidates, None)
    snapshot = Snapshot(
        config=config,
        billing_catalog=tuple(catalog),
        models=tuple(models),
        connections=tuple(connections),
        spend_usd=spend,
    )
    return State(
        snapshot=snapshot, now=top.get("now", parse_optional_time, None), model=model, candidates=candidates
    )


def config_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    c = snapshot.config
    return {
        "exit_cutoff_pct": c.exit_cutoff_pct,
        "reentry_min_remaining_pct": c.reentry_min_remaining_pct,
        "max_reading_age_s": c.max_reading_age_s,
        "rung_budget_usd": dict(c.rung_budget_usd),
        "budget_period": c.budget_period,
        "free_max_input_usd_per_mtok": c.free_max_input_usd_per_mtok,
        "cheap_max_input_usd_per_mtok": c.cheap_max_input_usd_per_mtok,
        "refresh_interval_s": c.refresh_interval_s,
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


def state_to_dict(snapshot: Snapshot, now: datetime) -> dict[str, Any]:
    """Every key explicit (defaults never drift); never a credential (the snapshot holds none)."""
    return {
        "now": format_utc(now),
        "config": config_to_dict(snapshot),
        "billing_catalog": [
            {
                "provider": e.provider,
                "auth_type": e.auth_type,
                "billing": e.billing,
                "overage": e.overage,
                "source_url": e.source_url,
                "notes": e.notes,
                "reviewed_at": format_utc_or_none(e.reviewed_at),
            }
            for e in snapshot.billing_catalog
        ],
        "models": [
            {
                "provider": m.provider,
                "model": m.model,
                "input_usd_per_mtok": m.input_usd_per_mtok,
                "output_usd_per_mtok": m.output_usd_per_mtok,
                "free": m.free,
                "categories": list(m.categories),
            }
            for m in snapshot.models
        ],
        "connections": [
            {
                "id": c.id,
                "provider": c.provider,
                "auth_type": c.auth_type,
                "keyless": c.keyless,
                "enabled": c.enabled,
                "disabled_reason": c.disabled_reason,
                "base_url": c.base_url,
                "cooldown_until": format_utc_or_none(c.cooldown_until),
                "overage_override": c.overage_override,
                "poll_interval_s": c.poll_interval_s,
                "reserve_pct": c.reserve_pct,
                "models": None if c.models is None else list(c.models),
                "quota": reading_to_dict(c.reading),
            }
            for c in snapshot.connections
        ],
        "spend_usd": {rung: float(snapshot.spend_usd.get(rung, 0.0)) for rung in BUDGET_RUNGS},
        "request": {"model": "auto/thrifty", "candidates": None},
    }


def load_json_text(text: str) -> Any:
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


def dump_json_text(document: Any, indent: int | None = None) -> str:
    """The document as JSON text, compact (or indented), non-ASCII characters as they are.

    A lone surrogate (json lets one into a state: load_json_text) is written as its \\u escape, as the
    file held it: no UTF-8 output can carry it. Only JSON values go in (floats are finite here: they
    were checked on the way in); a datetime or a dataclass is refused (TypeError), as json refuses it."""
    if indent is None:
        try:
            return orjson.dumps(document, option=_ORJSON_STRICT).decode()  # several times faster than json
        except TypeError:
            pass  # a lone surrogate, or a value that is not JSON: json decides
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(document, ensure_ascii=False, indent=indent)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SURROGATE = re.compile("[\ud800-\udfff]")
