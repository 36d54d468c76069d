"""What the ladder's gateway API answers, as frozen dataclasses (shared/contract/API.md, STATE.md).

Parsing is strict about the keys the contract promises and ignores keys it does not know, so a
newer ladder that adds a field does not break an older client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any


class LadderProtocolError(ValueError):
    """The ladder answered 2xx with a document this client cannot read (a version mismatch)."""


def parse_time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise LadderProtocolError(f"{where}: expected an ISO 8601 time, got {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise LadderProtocolError(f"{where}: expected an ISO 8601 time, got {value!r}") from None
    if moment.tzinfo is None:
        raise LadderProtocolError(f"{where}: the time {value!r} has no zone")
    return moment.astimezone(UTC)


def parse_time_or_none(value: Any, where: str) -> datetime | None:
    return None if value is None else parse_time(value, where)


def format_time(moment: datetime, where: str) -> str:
    """An aware datetime as ISO 8601; a naive one is refused (the ladder refuses times without a zone)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{where}: a time needs a zone (e.g. datetime.now(UTC)), got naive {moment}")
    return moment.isoformat()


class Fields:
    """A JSON object of the API read key by key; a missing key or a wrong type names where it is."""

    def __init__(self, document: Any, where: str) -> None:
        if not isinstance(document, Mapping):
            raise LadderProtocolError(f"{where}: expected a JSON object, got {type(document).__name__}")
        self.document = document
        self.where = where

    def at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def raw(self, key: str) -> Any:
        if key not in self.document:
            raise LadderProtocolError(f"{self.at(key)}: missing")
        return self.document[key]

    def text(self, key: str) -> str:
        value = self.raw(key)
        if not isinstance(value, str):
            raise LadderProtocolError(f"{self.at(key)}: expected a string, got {value!r}")
        return value

    def text_or_none(self, key: str) -> str | None:
        return None if self.raw(key) is None else self.text(key)

    def number(self, key: str) -> float:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise LadderProtocolError(f"{self.at(key)}: expected a number, got {value!r}")
        return float(value)

    def number_or_none(self, key: str) -> float | None:
        return None if self.raw(key) is None else self.number(key)

    def whole(self, key: str) -> int:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise LadderProtocolError(f"{self.at(key)}: expected a whole number, got {value!r}")
        return value

    def whole_or_none(self, key: str) -> int | None:
        return None if self.raw(key) is None else self.whole(key)

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool):
            raise LadderProtocolError(f"{self.at(key)}: expected true or false, got {value!r}")
        return value

    def time(self, key: str) -> datetime:
        return parse_time(self.raw(key), self.at(key))

    def time_or_none(self, key: str) -> datetime | None:
        return parse_time_or_none(self.raw(key), self.at(key))

    def items(self, key: str) -> list[tuple[Any, str]]:
        """A list's items, each with where it is (``pool[2]``)."""
        value = self.raw(key)
        if not isinstance(value, list):
            raise LadderProtocolError(f"{self.at(key)}: expected a list, got {type(value).__name__}")
        return [(item, f"{self.at(key)}[{index}]") for index, item in enumerate(value)]

    def texts(self, key: str) -> tuple[str, ...]:
        result: list[str] = []
        for item, where in self.items(key):
            if not isinstance(item, str):
                raise LadderProtocolError(f"{where}: expected a string, got {item!r}")
            result.append(item)
        return tuple(result)

    def mapping(self, key: str) -> Fields:
        return Fields(self.raw(key), self.at(key))


# --- resolution -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """What the gateway could route to. ``connection_id`` None = a logical candidate: the ladder
    filters ``allowed_connection_ids`` and the gateway picks among the survivors."""

    provider: str
    model: str
    connection_id: str | None = None
    allowed_connection_ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "connection_id": self.connection_id,
            "allowed_connection_ids": list(self.allowed_connection_ids),
        }


@dataclass(frozen=True)
class PoolEntry:
    provider: str
    model: str
    rung: str
    rung_index: int
    connection_id: str | None
    allowed_connection_ids: tuple[str, ...]

    @classmethod
    def from_json(cls, document: Any, where: str) -> PoolEntry:
        f = Fields(document, where)
        return cls(
            provider=f.text("provider"),
            model=f.text("model"),
            rung=f.text("rung"),
            rung_index=f.whole("rung_index"),
            connection_id=f.text_or_none("connection_id"),
            allowed_connection_ids=f.texts("allowed_connection_ids"),
        )


@dataclass(frozen=True)
class Excluded:
    """A (candidate, connection) pair left out, with its reason code (DESIGN L14)."""

    provider: str
    model: str
    connection_id: str | None
    rung: str | None
    reason: str
    detail: str

    @classmethod
    def from_json(cls, document: Any, where: str) -> Excluded:
        f = Fields(document, where)
        return cls(
            provider=f.text("provider"),
            model=f.text("model"),
            connection_id=f.text_or_none("connection_id"),
            rung=f.text_or_none("rung"),
            reason=f.text("reason"),
            detail=f.text_or_none("detail") or "",
        )


@dataclass(frozen=True)
class EmptyPool:
    """Why a pool is empty and when quota is expected back (None: nothing the clock will fix)."""

    code: str
    message: str
    retry_at: datetime | None

    @classmethod
    def from_json(cls, document: Any, where: str) -> EmptyPool:
        f = Fields(document, where)
        return cls(code=f.text("code"), message=f.text("message"), retry_at=f.time_or_none("retry_at"))


@dataclass(frozen=True)
class Resolution:
    model: str
    grouping: str
    category: str | None
    resolved_at: datetime
    pool: tuple[PoolEntry, ...]
    excluded: tuple[Excluded, ...]
    empty: EmptyPool | None
    refresh: tuple[str, ...]

    @classmethod
    def from_json(cls, document: Any) -> Resolution:
        f = Fields(document, "")
        empty = f.raw("empty")
        return cls(
            model=f.text("model"),
            grouping=f.text("grouping"),
            category=f.text_or_none("category"),
            resolved_at=f.time("resolved_at"),
            pool=tuple(PoolEntry.from_json(item, where) for item, where in f.items("pool")),
            excluded=tuple(Excluded.from_json(item, where) for item, where in f.items("excluded")),
            empty=None if empty is None else EmptyPool.from_json(empty, "empty"),
            refresh=f.texts("refresh"),
        )


# --- usage ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UsageEvent:
    """One upstream call to count. ``request_id`` makes a report idempotent: send the same event
    again (a retry, a replayed log) and the ladder answers as the first time without counting it
    twice. ``cost_usd`` None: the ladder prices the tokens from its model catalog."""

    request_id: str
    connection_id: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | Decimal | None = None
    occurred_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "request_id": self.request_id,
            "connection_id": self.connection_id,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cost_usd is not None:
            document["cost_usd"] = float(self.cost_usd)
        if self.occurred_at is not None:
            document["occurred_at"] = format_time(self.occurred_at, "occurred_at")
        return document


@dataclass(frozen=True)
class UsageRecorded:
    request_id: str
    connection_id: str | None
    model: str | None
    rung: str | None
    rung_index: int | None
    budget_rung: str | None
    cost_usd: float
    budget_cost_usd: float
    occurred_at: datetime

    @classmethod
    def from_json(cls, document: Any, where: str) -> UsageRecorded:
        f = Fields(document, where)
        return cls(
            request_id=f.text("request_id"),
            connection_id=f.text_or_none("connection_id"),
            model=f.text_or_none("model"),
            rung=f.text_or_none("rung"),
            rung_index=f.whole_or_none("rung_index"),
            budget_rung=f.text_or_none("budget_rung"),
            cost_usd=f.number("cost_usd"),
            budget_cost_usd=f.number("budget_cost_usd"),
            occurred_at=f.time("occurred_at"),
        )


@dataclass(frozen=True)
class RungBudget:
    """A paid rung's budget this period (None: not gated) and what was spent on it."""

    budget_usd: float | None
    spent_usd: float
    period_ends_at: datetime

    @classmethod
    def from_json(cls, document: Any, where: str) -> RungBudget:
        f = Fields(document, where)
        return cls(
            budget_usd=f.number_or_none("budget_usd"),
            spent_usd=f.number("spent_usd"),
            period_ends_at=f.time("period_ends_at"),
        )


def _budgets(f: Fields) -> dict[str, RungBudget]:
    budgets = f.mapping("budgets")
    return {
        str(rung): RungBudget.from_json(value, budgets.at(str(rung)))
        for rung, value in budgets.document.items()
    }


@dataclass(frozen=True)
class UsageReport:
    events: tuple[UsageRecorded, ...]
    budgets: Mapping[str, RungBudget]

    @classmethod
    def from_json(cls, document: Any) -> UsageReport:
        f = Fields(document, "")
        return cls(
            events=tuple(UsageRecorded.from_json(item, where) for item, where in f.items("events")),
            budgets=_budgets(f),
        )


# --- failures, readings, connections ----------------------------------------------------------


@dataclass(frozen=True)
class FailureOutcome:
    """The adapter's verdict: quota_exhausted, rate_limited, auth_failed or upstream_error."""

    classification: str
    cooldown_until: datetime | None
    reset_at: datetime | None
    window: str | None
    # Every window the failure latched (the first is ``window``); empty from a ladder older than it.
    windows: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, document: Any) -> FailureOutcome:
        f = Fields(document, "")
        return cls(
            classification=f.text("classification"),
            cooldown_until=f.time_or_none("cooldown_until"),
            reset_at=f.time_or_none("reset_at"),
            window=f.text_or_none("window"),
            windows=f.texts("windows") if "windows" in f.document else (),
        )


@dataclass(frozen=True)
class QuotaWindow:
    name: str
    remaining_pct: float
    reset_at: datetime | None
    scope_models: tuple[str, ...]
    latched: bool

    @classmethod
    def from_json(cls, document: Any, where: str) -> QuotaWindow:
        f = Fields(document, where)
        return cls(
            name=f.text("name"),
            remaining_pct=f.number("remaining_pct"),
            reset_at=f.time_or_none("reset_at"),
            scope_models=f.texts("scope_models"),
            latched=f.flag("latched"),
        )


@dataclass(frozen=True)
class Reading:
    fetched_at: datetime
    source: str
    verifiable: bool
    observed_overage: str | None
    windows: tuple[QuotaWindow, ...]

    @classmethod
    def from_json(cls, document: Any, where: str = "reading") -> Reading:
        f = Fields(document, where)
        return cls(
            fetched_at=f.time("fetched_at"),
            source=f.text("source"),
            verifiable=f.flag("verifiable"),
            observed_overage=f.text_or_none("observed_overage"),
            windows=tuple(QuotaWindow.from_json(item, at) for item, at in f.items("windows")),
        )

    def window(self, name: str) -> QuotaWindow | None:
        return next((w for w in self.windows if w.name == name), None)


@dataclass(frozen=True)
class ConnectionState:
    """A connection as the ladder sees it: billing verdict, reading, cooldown, rung per model."""

    id: str
    provider: str
    auth_type: str | None
    billing: str
    overage: str
    enabled: bool
    disabled_reason: str | None
    cooldown_until: datetime | None
    reading: Reading | None
    rungs: Mapping[str, str] = field(default_factory=dict)
    poll_interval_s: float | None = None
    reserve_pct: float | None = None

    @classmethod
    def from_json(cls, document: Any, where: str) -> ConnectionState:
        f = Fields(document, where)
        reading = f.raw("reading")
        rungs = f.mapping("rungs")
        return cls(
            id=f.text("id"),
            provider=f.text("provider"),
            auth_type=f.text_or_none("auth_type"),
            billing=f.text("billing"),
            overage=f.text("overage"),
            enabled=f.flag("enabled"),
            disabled_reason=f.text_or_none("disabled_reason"),
            cooldown_until=f.time_or_none("cooldown_until"),
            reading=None if reading is None else Reading.from_json(reading, f.at("reading")),
            rungs={str(model): rungs.text(str(model)) for model in rungs.document},
            poll_interval_s=f.number_or_none("poll_interval_s"),
            reserve_pct=f.number_or_none("reserve_pct"),
        )


@dataclass(frozen=True)
class ConnectionsReport:
    connections: tuple[ConnectionState, ...]
    budgets: Mapping[str, RungBudget]

    @classmethod
    def from_json(cls, document: Any) -> ConnectionsReport:
        f = Fields(document, "")
        return cls(
            connections=tuple(
                ConnectionState.from_json(item, where) for item, where in f.items("connections")
            ),
            budgets=_budgets(f),
        )

    def get(self, connection_id: str) -> ConnectionState | None:
        return next((c for c in self.connections if c.id == connection_id), None)
