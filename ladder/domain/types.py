"""The routing law's vocabulary: value types and closed sets of values (DESIGN §1).

The values a state holds by the thousand (Window, Reading, Connection; and CatalogEntry, ModelEntry,
Candidate with them) are frozen msgspec Structs, and their fields carry the limits of the wire
(STATE.md): the state file decodes straight into them in one call (ladder.contract.state). Measured
on 1,000 connections with two windows each: decoding into Structs takes about 1.5x orjson.loads of the
same bytes (0.6x once the per-string patterns moved to the contract's pass); decoding into twin
Structs and then building the slotted frozen dataclasses these types used to be added about 5x
orjson.loads more (a dataclass __init__ sets each field through object.__setattr__; slot_builder's
exec and __class__ swap once halved that). gc=False: none of them can hold a reference cycle, so
the cyclic collector never tracks them and needs no pausing.

The values there is one of per state or per answer (LadderConfig, Snapshot, Resolution and its parts)
stay dataclasses: Snapshot keeps a __dict__ for its cached lookups and memo."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, get_args

import msgspec

Billing = Literal["subscription", "metered", "keyless", "unknown"]
Overage = Literal["hard-stop", "meters-to-paid", "unknown"]
Source = Literal["poll", "headers", "error"]
Grouping = Literal["subscription", "thrifty"]
BudgetPeriod = Literal["day", "month"]
Tier = Literal["free", "cheap", "premium"]

Category = Literal["coding", "reasoning", "vision", "chat", "multimodal"]

BILLINGS: tuple[Billing, ...] = get_args(Billing)
OVERAGES: tuple[Overage, ...] = get_args(Overage)
SOURCES: tuple[Source, ...] = get_args(Source)
BUDGET_PERIODS: tuple[BudgetPeriod, ...] = get_args(BudgetPeriod)
CATEGORIES: tuple[Category, ...] = get_args(Category)
BUDGET_RUNGS: tuple[str, ...] = ("cheap", "premium")

# Limits of the wire, written once: msgspec checks them as it decodes (ladder.contract.state).
POLL_INTERVAL_MAX_S = 86_400.0
CONNECTION_ID_CHARACTER = r"[A-Za-z0-9._:-]"  # 1 to 64 of them
CONNECTION_ID_PATTERN = rf"\A{CONNECTION_ID_CHARACTER}{{1,64}}\Z"
Pct = Annotated[float, msgspec.Meta(ge=0, le=100)]
Text = Annotated[str, msgspec.Meta(pattern=r"\S")]  # a string that is not blank
Time = Annotated[datetime, msgspec.Meta(tz=True)]
# The strings a state holds by the thousand: a pattern costs msgspec a Python call per value (most of a
# decode's time), so ladder.contract.state checks their blankness (a Name) and an id's characters
# (CONNECTION_ID_CHARACTER) in its one pass over the connections.
Name = Annotated[str, msgspec.Meta(min_length=1)]
ConnectionId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
PollIntervalS = Annotated[float, msgspec.Meta(gt=0, le=POLL_INTERVAL_MAX_S)]
# A price or an amount: a finite number ≥ 0 (infinity, which Python's json reads for 1e400, is refused).
Amount = Annotated[float, msgspec.Meta(ge=0, le=1.7976931348623157e308)]


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


def rung_label(rung: int | None) -> str:
    """0 → "subscription" …; None (no rung: an empty pool) → "empty"."""
    return "empty" if rung is None else RUNG_LABELS[rung]


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

    ALL: ClassVar[tuple[str, ...]]  # every code above, in that order


Reason.ALL = tuple(code for name, code in vars(Reason).items() if name.isupper())


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


@dataclass(frozen=True, slots=True)
class Limits:
    """One connection's Thresholds (DESIGN L5, L6 Reserve)."""

    exit_cutoff_pct: float
    reserve_pct: float | None
    cutoff_pct: float
    floor_pct: float
    age_limit_s: float


# What L5 and L6 read of a connection: its cutoff and re-entry floor (shifted up by its reserve), the
# global exit cutoff (which alone names a window `quota_exhausted`), and its reading age limit. A
# LadderConfig is the thresholds of a connection with neither a reserve nor a poll interval;
# ladder.domain.windows.connection_limits gives any connection's.
Thresholds: TypeAlias = LadderConfig | Limits


class CatalogEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    provider: Text
    auth_type: str | None
    billing: Billing
    overage: Overage
    source_url: Text | None = None
    notes: str = ""
    reviewed_at: Time | None = None


class ModelEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    provider: Text
    model: Text
    input_usd_per_mtok: Amount | None = None
    output_usd_per_mtok: Amount | None = None
    free: bool = False
    categories: tuple[Category, ...] = ()


class Window(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    name: Name
    remaining_pct: Pct
    reset_at: Time | None = None
    scope_models: tuple[Name, ...] = ()
    latched: bool = False
    exhausts_at: datetime | None = None  # when it reaches the cutoff at its burn rate (domain.forecast)


class Reading(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    fetched_at: Time
    windows: tuple[Window, ...] = ()
    source: Source = "poll"
    verifiable: bool = True
    observed_overage: Overage | None = None
    # Why an adapter could not verify the reading (a missing or renamed field…), for people. Not part
    # of the state file: ladder.contract.state refuses a note there.
    note: str = ""


class Connection(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    id: ConnectionId
    provider: Name
    auth_type: str | None = None
    keyless: bool = False
    enabled: bool = True
    disabled_reason: Text | None = None
    base_url: Text | None = None
    cooldown_until: Time | None = None
    overage_override: Overage | None = None
    models: tuple[Text, ...] | None = None
    reading: Reading | None = msgspec.field(default=None, name="quota")  # "quota" in STATE.md
    # L5: its polling interval when slower than refresh_interval_s (None: polled every interval).
    poll_interval_s: PollIntervalS | None = None
    # L6: quota kept for the operator's own use, in % (None: none kept).
    reserve_pct: Pct | None = None


class Candidate(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    provider: Text
    model: Text
    connection_id: Text | None = None
    allowed_connection_ids: tuple[Text, ...] = ()


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
    # verdicts with their validity: ladder.domain.memo); never compared.
    memo: dict[tuple[Any, ...], Any] = field(
        default_factory=dict, init=False, compare=False, repr=False, hash=False
    )

    def with_spend(self, spend_usd: Mapping[str, float]) -> Snapshot:
        """The same inputs with other spend. The memo is shared: what it holds is derived from the
        other inputs, or (pair verdicts) kept apart by the budgets' state (ladder.domain.memo)."""
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
FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)


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
