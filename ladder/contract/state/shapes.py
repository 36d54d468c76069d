"""The state file of STATE.md as msgspec Structs: a file decodes straight into them and the domain's
value types (ladder.domain.types says why those are Structs) in one call (``decode``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType

from ladder.domain.types import (
    Amount,
    Billing,
    BudgetPeriod,
    Candidate,
    Connection,
    ModelEntry,
    Overage,
    Pct,
    Snapshot,
    Text,
    Time,
)

# What an adapter can observe of overage: switched on, or seen off. "unknown" is no observation (null).
OBSERVED_OVERAGES = ("meters-to-paid", "hard-stop")
Positive = Annotated[float, msgspec.Meta(gt=0, le=1.7976931348623157e308)]
# Reading's note is the adapters', a window's exhausts_at the ladder's forecast (ladder.domain.types).
NOT_ON_THE_WIRE = frozenset({"note", "exhausts_at"})


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
