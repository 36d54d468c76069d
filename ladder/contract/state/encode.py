"""The state file written back from a snapshot (`ladder_resolve --export`): every key explicit."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import msgspec

from ladder.contract.state.shapes import NOT_ON_THE_WIRE
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import BUDGET_RUNGS, LadderConfig, Reading, Snapshot


def config_to_dict(config: LadderConfig) -> dict[str, Any]:
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    return {**values, "rung_budget_usd": dict(config.rung_budget_usd)}


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
        if f.encode_name not in NOT_ON_THE_WIRE
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
