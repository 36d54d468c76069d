"""The routing law's vocabulary: frozen dataclasses and closed sets of values (DESIGN §1).

Value types are slotted: a state of 1,000 connections holds about 5,000 of them, and without a
__dict__ a five-field value takes 80 bytes instead of 120 (250 as the parser used to build them), so
walking them misses the CPU cache less (12–13% of an offline resolution). Snapshot keeps a __dict__
for its cached lookups and memo (and resolve's VerdictMemo is the mutable memo itself)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import IntEnum
from functools import cached_property
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")

Billing = Literal["subscription", "metered", "keyless", "unknown"]
Overage = Literal["hard-stop", "meters-to-paid", "unknown"]
Source = Literal["poll", "headers", "error"]
Grouping = Literal["subscription", "thrifty"]
BudgetPeriod = Literal["day", "month"]
Tier = Literal["free", "cheap", "premium"]

BILLINGS: tuple[Billing, ...] = ("subscription", "metered", "keyless", "unknown")
OVERAGES: tuple[Overage, ...] = ("hard-stop", "meters-to-paid", "unknown")
SOURCES: tuple[Source, ...] = ("poll", "headers", "error")
BUDGET_PERIODS: tuple[BudgetPeriod, ...] = ("day", "month")
CATEGORIES: tuple[str, ...] = ("coding", "reasoning", "vision", "chat", "multimodal")
BUDGET_RUNGS: tuple[str, ...] = ("cheap", "premium")


class Rung(IntEnum):
    SUBSCRIPTION = 0
    KEYLESS = 1
    FREE = 2
    CHEAP = 3
    PREMIUM = 4

    @property
    def label(self) -> str:
        return RUNG_LABELS[self]


RUNG_LABELS: tuple[str, ...] = tuple(rung.name.lower() for rung in Rung)


class Reason:
    """Reason codes of DESIGN L14, in the precedence order of STATE.md (first one wins)."""

    UNKNOWN_CONNECTION = "unknown_connection"
    DISABLED = "disabled"
    COOLING_DOWN = "cooling_down"
    KEYLESS_NOT_PLAN = "keyless_not_plan"
    UNCURATED_PROVIDER = "uncurated_provider"
    NOT_PLAN_BILLING = "not_plan_billing"
    OVERAGE_NOT_HARD_STOP = "overage_not_hard_stop"
    RUNG_DISABLED = "rung_disabled"
    BUDGET_EXHAUSTED = "budget_exhausted"
    NO_READING = "no_reading"
    READING_UNVERIFIABLE = "reading_unverifiable"
    WINDOW_RESET_PASSED = "window_reset_passed"
    READING_STALE = "reading_stale"
    QUOTA_EXHAUSTED = "quota_exhausted"
    RESERVE_REACHED = "reserve_reached"
    BELOW_REENTRY_FLOOR = "below_reentry_floor"

    ALL: tuple[str, ...] = (
        UNKNOWN_CONNECTION,
        DISABLED,
        COOLING_DOWN,
        KEYLESS_NOT_PLAN,
        UNCURATED_PROVIDER,
        NOT_PLAN_BILLING,
        OVERAGE_NOT_HARD_STOP,
        RUNG_DISABLED,
        BUDGET_EXHAUSTED,
        NO_READING,
        READING_UNVERIFIABLE,
        WINDOW_RESET_PASSED,
        READING_STALE,
        QUOTA_EXHAUSTED,
        RESERVE_REACHED,
        BELOW_REENTRY_FLOOR,
    )


def slot_builder(cls: type[T]) -> Callable[..., T]:
    """A function that builds a frozen slotted dataclass from all its field values, positional, in
    field order and already checked: for parsers of large states.

    The generated __init__ sets each field through object.__setattr__, a generic call per field. This
    builder fills a plain twin class of the same slots with ordinary attribute stores, which the
    interpreter specialises, then makes the instance a `cls` by assigning __class__ (CPython allows it
    between classes of the same layout, and checks that it is): half the cost per instance.
    Written from source once per class, as dataclasses writes __init__."""
    if not hasattr(cls, "__dataclass_fields__") or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__, which a builder would skip")
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if clash := _BUILDER_NAMES.intersection(names):
        raise TypeError(f"{cls.__name__} has a field named {sorted(clash)[0]}, a name the builder uses")
    twin = type(f"{cls.__name__}Parts", (), {"__slots__": vars(cls)["__slots__"], "__module__": __name__})
    stores = "".join(f"    obj.{name} = {name}\n" for name in names)
    source = (
        f"def build({', '.join(names)}):\n"
        f"    obj = _new(_twin)\n{stores}    obj.__class__ = _cls\n    return obj\n"
    )
    namespace: dict[str, Any] = {"_new": object.__new__, "_twin": twin, "_cls": cls}
    exec(source, namespace)  # noqa: S102 — field names of our own dataclass, nothing from input
    build: Callable[..., T] = namespace["build"]
    build.__qualname__ = f"slot_builder({cls.__name__})"
    build(*[None] * len(names))  # a layout CPython refuses fails here, at import, not at a first parse
    return build


_BUILDER_NAMES = frozenset(("obj", "_new", "_twin", "_cls"))


@dataclass(frozen=True, slots=True)
class LadderConfig:
    exit_cutoff_pct: float = 2.0
    reentry_min_remaining_pct: float = 5.0
    max_reading_age_s: float = 180.0
    rung_budget_usd: Mapping[str, float] = field(default_factory=dict)
    budget_period: BudgetPeriod = "month"
    free_max_input_usd_per_mtok: float = 0.0
    cheap_max_input_usd_per_mtok: float = 1.0
    refresh_interval_s: float = 60.0
    max_event_cost_usd: float = 100.0  # a usage event priced above it is refused (API.md)

    @property
    def reentry_floor_pct(self) -> float:
        return max(self.reentry_min_remaining_pct, self.exit_cutoff_pct)

    # The configuration is also the Thresholds of a connection with no reserve and no poll interval.
    @property
    def reserve_pct(self) -> None:
        return None

    @property
    def cutoff_pct(self) -> float:
        return self.exit_cutoff_pct

    @property
    def floor_pct(self) -> float:
        return self.reentry_floor_pct

    @property
    def age_limit_s(self) -> float:
        return self.max_reading_age_s


class Thresholds(Protocol):
    """What L5 and L6 read of a connection: its cutoff and re-entry floor (shifted up by its reserve),
    the global exit cutoff (which alone names a window `quota_exhausted`), and its reading age limit.
    A LadderConfig is the thresholds of a connection with neither a reserve nor a poll interval;
    ladder.domain.windows.connection_limits gives any connection's."""

    @property
    def exit_cutoff_pct(self) -> float: ...
    @property
    def reserve_pct(self) -> float | None: ...
    @property
    def cutoff_pct(self) -> float: ...
    @property
    def floor_pct(self) -> float: ...
    @property
    def age_limit_s(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """One connection's Thresholds (DESIGN L5, L6 Reserve)."""

    exit_cutoff_pct: float
    reserve_pct: float | None
    cutoff_pct: float
    floor_pct: float
    age_limit_s: float


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    provider: str
    auth_type: str | None
    billing: Billing
    overage: Overage
    source_url: str | None = None
    notes: str = ""
    reviewed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ModelEntry:
    provider: str
    model: str
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    free: bool = False
    categories: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Window:
    name: str
    remaining_pct: float
    reset_at: datetime | None = None
    scope_models: tuple[str, ...] = ()
    latched: bool = False


@dataclass(frozen=True, slots=True)
class Reading:
    fetched_at: datetime
    windows: tuple[Window, ...] = ()
    source: Source = "poll"
    verifiable: bool = True
    observed_overage: Overage | None = None
    # Why an adapter could not verify the reading (a missing or renamed field…), for people.
    note: str = ""


@dataclass(frozen=True, slots=True)
class Connection:
    id: str
    provider: str
    auth_type: str | None = None
    keyless: bool = False
    enabled: bool = True
    disabled_reason: str | None = None
    base_url: str | None = None
    cooldown_until: datetime | None = None
    overage_override: Overage | None = None
    models: tuple[str, ...] | None = None
    reading: Reading | None = None
    # L5: its polling interval when slower than refresh_interval_s (None: polled every interval).
    poll_interval_s: float | None = None
    # L6: quota kept for the operator's own use, in % (None: none kept).
    reserve_pct: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    provider: str
    model: str
    connection_id: str | None = None
    allowed_connection_ids: tuple[str, ...] = ()


@dataclass(frozen=True)  # not slotted: cached_property needs a __dict__
class Snapshot:
    """Everything a resolution reads, as one immutable value (DESIGN L12)."""

    config: LadderConfig = field(default_factory=LadderConfig)
    billing_catalog: tuple[CatalogEntry, ...] = ()
    models: tuple[ModelEntry, ...] = ()
    connections: tuple[Connection, ...] = ()
    # Spend of the current budget period per budget rung ("cheap", "premium"); absent = $0.
    spend_usd: Mapping[str, float] = field(default_factory=dict)
    # Per-snapshot memo of values derived from it alone (billing verdicts, catalog candidates, pair
    # verdicts with their validity: ladder.domain.resolve); never compared.
    memo: dict[tuple[Any, ...], Any] = field(
        default_factory=dict, init=False, compare=False, repr=False, hash=False
    )

    def with_spend(self, spend_usd: Mapping[str, float]) -> Snapshot:
        """The same inputs with other spend. The memo is shared: what it holds is derived from the
        other inputs, or (pair verdicts) kept apart by the budgets' state (ladder.domain.resolve)."""
        other = Snapshot(self.config, self.billing_catalog, self.models, self.connections, spend_usd)
        object.__setattr__(other, "memo", self.memo)
        return other

    @cached_property
    def connections_by_id(self) -> dict[str, Connection]:
        return {c.id: c for c in self.connections}

    @cached_property
    def models_by_key(self) -> dict[tuple[str, str], ModelEntry]:
        return {(m.provider, m.model): m for m in self.models}

    @cached_property
    def catalog_by_key(self) -> dict[tuple[str, str | None], CatalogEntry]:
        return {(e.provider, e.auth_type): e for e in self.billing_catalog}


@dataclass(frozen=True, slots=True)
class PoolEntry:
    provider: str
    model: str
    rung: Rung
    connection_id: str | None
    allowed_connection_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Exclusion:
    provider: str
    model: str
    connection_id: str
    rung: Rung | None
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class Empty:
    code: str
    message: str
    retry_at: datetime | None


@dataclass(frozen=True, slots=True)
class Resolution:
    model: str
    grouping: Grouping
    category: str | None
    resolved_at: datetime
    pool: tuple[PoolEntry, ...]
    excluded: tuple[Exclusion, ...]
    empty: Empty | None
    refresh: tuple[str, ...]


FailureClass = Literal["quota_exhausted", "rate_limited", "auth_failed", "upstream_error"]
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    "quota_exhausted",
    "rate_limited",
    "auth_failed",
    "upstream_error",
)


@dataclass(frozen=True, slots=True)
class SpentWindow:
    """One window a failure names as spent, with its own reset when the failure says it."""

    name: str
    reset_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A provider adapter's classification of an upstream error (DESIGN L6/L7)."""

    classification: FailureClass
    # The window the failure names (e.g. "7d" for a weekly exhaustion), when the adapter can tell.
    window: str | None = None
    # When the exhausted window resets, if the error says so (headers or body).
    reset_at: datetime | None = None
    # Upstream Retry-After (or its equivalent) in seconds, when given.
    retry_after_s: float | None = None
    detail: str = ""
    # Every window the failure names as spent when it names more than one (the first is ``window``);
    # empty when it names one window or none (see ``spent_windows``).
    windows: tuple[SpentWindow, ...] = ()

    def spent_windows(self) -> tuple[SpentWindow, ...]:
        """The windows this failure latches by name: ``windows``, else ``window`` with ``reset_at``."""
        if self.windows:
            return self.windows
        return (SpentWindow(self.window, self.reset_at),) if self.window else ()
