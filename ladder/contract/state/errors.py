"""msgspec's errors in STATE.md's words.

An error names the field by its path in STATE.md's form,
`connections[3].quota.windows[0].remaining_pct: must be between 0 and 100`, translated from msgspec's
`... - at $.connections[3].quota.windows[0].remaining_pct`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import msgspec

from ladder.contract.fault import Step, field_path, located, unknown_key, value_at
from ladder.contract.state.shapes import NOT_ON_THE_WIRE, OBSERVED_OVERAGES, StateFile
from ladder.domain.types import BILLINGS, BUDGET_PERIODS, CATEGORIES, OVERAGES, POLL_INTERVAL_MAX_S, SOURCES


class StateError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


_KEY = re.compile(r"Object (?P<kind>missing required|contains unknown) field `(?P<key>.*)`", re.S)

TEXT_MESSAGE = "must be a non-empty string"
# By field name (or parent.name, or name[] for a list's items), its message whatever msgspec said.
MESSAGES: dict[str, str] = {
    **dict.fromkeys(("remaining_pct", "reserve_pct"), "must be between 0 and 100"),
    "poll_interval_s": f"must be a number of seconds above 0 and at most {POLL_INTERVAL_MAX_S:g}, or null",
    "connections.id": "must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', ':' or '-'",
    **dict.fromkeys(
        ("provider", "model", "name", "disabled_reason", "base_url", "source_url", "connection_id"),
        TEXT_MESSAGE,
    ),
    **dict.fromkeys(("scope_models[]", "models[]", "allowed_connection_ids[]"), TEXT_MESSAGE),
    **dict.fromkeys(("request.model", "notes"), "must be a string"),
    "auth_type": "must be a string or null",
    **dict.fromkeys(("input_usd_per_mtok", "output_usd_per_mtok"), "must be a number ≥ 0 or null"),
    **dict.fromkeys(("keyless", "enabled", "free", "verifiable", "latched"), "must be true or false"),
    **dict.fromkeys(("exit_cutoff_pct", "reentry_min_remaining_pct"), "must be a number between 0 and 100"),
    **dict.fromkeys(("max_reading_age_s", "refresh_interval_s"), "must be a positive number"),
    **dict.fromkeys(
        ("max_event_cost_usd", "free_max_input_usd_per_mtok", "cheap_max_input_usd_per_mtok"),
        "must be a number ≥ 0",
    ),
    **dict.fromkeys(("spend_usd.cheap", "spend_usd.premium"), "must be a number ≥ 0"),
    **dict.fromkeys(
        ("rung_budget_usd.cheap", "rung_budget_usd.premium"), "must be a number ≥ 0 (0 disables the rung)"
    ),
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


def translate(exc: msgspec.ValidationError, document: Any) -> StateError:
    said, steps = located(exc)
    if key := _KEY.fullmatch(said):
        unknown = key["kind"] == "contains unknown"
        message = unknown_key(StateFile, steps, NOT_ON_THE_WIRE) if unknown else "is required"
        return StateError(field_path([*steps, key["key"]]), message)
    return StateError(field_path(steps), _message(steps, said, value_at(document, steps)))


def _message(steps: list[Step], said: str, value: Any) -> str:
    names = ["", *(step for step in steps if isinstance(step, str))]
    name = names[-1]
    item = bool(steps) and isinstance(steps[-1], int)
    key = f"{name}[]" if item else name
    if said.startswith("Expected `object"):
        return "must be an object"
    if said.startswith("Expected `array") and not item:
        return "must be a list"
    if key in _TIMES:
        return time_message(value)
    if key in _CHOICES:
        return choice_message(key, value)
    parent = names[-2] if len(names) > 1 else ""
    return MESSAGES.get(f"{parent}.{key}") or MESSAGES.get(key) or said[:1].lower() + said[1:]


def choice_message(key: str, value: Any) -> str:
    choices, nullable = _CHOICES[key]
    accepted = ", ".join(choices) + (", or null" if nullable else "")
    if key == "categories[]":
        return f"{value!r} is not a category; accepted: {accepted}"
    return f"{value!r} is not accepted; accepted: {accepted}"


def time_message(value: Any) -> str:
    if not isinstance(value, str):
        return "must be an ISO 8601 time with a zone, e.g. 2026-08-22T12:00:00Z"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not an ISO 8601 time"
    if moment.utcoffset() is None:
        return f"{value!r} has no zone; write Z or an offset such as +02:00"
    return f"{value!r} is not accepted; write it as 2026-08-22T12:00:00Z or with an offset such as +02:00"
