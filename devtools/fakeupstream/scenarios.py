"""The scenarios of one scope (a kind, a connection, or everything) and how the control API sets them.

A scope holds independent aspects: quota (``Drain`` or ``Pinned``), a one-shot or lasting error, a
fault, a delay and a variant; the package docstring says what each scenario serves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from devtools.fakeupstream.fixtures import ECHO_ERRORS, KindFixture
from devtools.fakeupstream.payload import (
    ControlError,
    read_call,
    read_moment,
    read_number,
    read_str,
    read_times,
)
from devtools.fakeupstream.rewriters import REWRITERS, UNSUPPORTED

FaultMode = Literal["malformed", "oversized", "reset_connection"]
DEFAULT_OVERSIZED_MB = 16.0
# The parameters each scenario accepts besides kind, connection and scenario; any other is refused.
PARAMETERS: dict[str, tuple[str, ...]] = {
    "static": (),
    "drain": ("drain_s", "reset_after_s", "start_pct", "end_pct", "started_at", "exhausted_error"),
    "set": ("remaining_pct", "reset_at", "exhausted_error"),
    "error": ("case", "times", "call"),
    "slow": ("delay_ms",),
    "malformed": ("times", "call"),
    "oversized": ("size_mb", "chunked", "times", "call"),
    "reset_connection": ("times", "call"),
    "variant": ("variant", "call"),
}


@dataclass
class Drain:
    drain_s: float
    reset_after_s: float
    start_pct: float
    end_pct: float
    started_at: datetime
    exhausted_error: str | None

    def at(self, now: datetime) -> tuple[float, datetime]:
        """Remaining % and the reset moment of the current cycle."""
        cycle = self.drain_s + self.reset_after_s
        elapsed = max(0.0, (now - self.started_at).total_seconds())
        index = int(elapsed // cycle)
        phase = elapsed - index * cycle
        top = self.start_pct if index == 0 else 100.0
        if phase < self.drain_s:
            remaining = top - (top - self.end_pct) * phase / self.drain_s
        else:
            remaining = self.end_pct
        return remaining, self.started_at + timedelta(seconds=(index + 1) * cycle)

    def describe(self, now: datetime) -> dict[str, Any]:
        remaining, reset_at = self.at(now)
        return {
            "scenario": "drain",
            "drain_s": self.drain_s,
            "reset_after_s": self.reset_after_s,
            "start_pct": self.start_pct,
            "end_pct": self.end_pct,
            "started_at": self.started_at.isoformat(),
            "exhausted_error": self.exhausted_error,
            "remaining_pct": round(remaining, 4),
            "reset_at": reset_at.isoformat(),
        }


@dataclass
class Pinned:
    remaining_pct: float
    reset_at: datetime | None
    exhausted_error: str | None

    def at(self, now: datetime) -> tuple[float, datetime | None]:
        return self.remaining_pct, self.reset_at

    def describe(self, now: datetime) -> dict[str, Any]:
        return {
            "scenario": "set",
            "remaining_pct": self.remaining_pct,
            "reset_at": self.reset_at.isoformat() if self.reset_at else None,
            "exhausted_error": self.exhausted_error,
        }


@dataclass
class ErrorPlan:
    case: str
    remaining: int | None
    call: str | None

    def describe(self) -> dict[str, Any]:
        return {"scenario": "error", "case": self.case, "times_left": self.remaining, "call": self.call}


@dataclass
class Fault:
    mode: FaultMode
    remaining: int | None
    call: str | None
    size_bytes: int = 0
    chunked: bool = False

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"scenario": self.mode, "times_left": self.remaining, "call": self.call}
        if self.mode == "oversized":
            described |= {"size_bytes": self.size_bytes, "chunked": self.chunked}
        return described


@dataclass
class Variant:
    name: str
    call: str

    def describe(self) -> dict[str, Any]:
        return {"scenario": "variant", "variant": self.name, "call": self.call}


@dataclass
class Scope:
    quota: Drain | Pinned | None = None
    error: ErrorPlan | None = None
    fault: Fault | None = None
    delay_ms: float | None = None
    variant: Variant | None = None

    def describe(self, now: datetime) -> dict[str, Any]:
        return {
            "quota": self.quota.describe(now) if self.quota else None,
            "error": self.error.describe() if self.error else None,
            "fault": self.fault.describe() if self.fault else None,
            "delay_ms": self.delay_ms,
            "variant": self.variant.describe() if self.variant else None,
        }


ScopeKey = tuple[str | None, str | None]


def scenario_update(
    scenario: str, fixture: KindFixture | None, payload: dict[str, Any], now: datetime
) -> Callable[[Scope], None]:
    """What setting ``scenario`` with ``payload`` does to a scope; a ControlError naming a bad parameter."""
    if scenario not in PARAMETERS:
        raise ControlError(400, f"unknown scenario {scenario!r}; scenarios: {' '.join(PARAMETERS)}")
    unknown = sorted(set(payload) - {"kind", "connection", "scenario", *PARAMETERS[scenario]})
    if unknown:
        accepted = ", ".join(PARAMETERS[scenario]) or "none"
        raise ControlError(400, f"unknown parameter {unknown[0]!r} of {scenario}; accepted: {accepted}")
    if scenario in ("malformed", "oversized", "reset_connection"):
        call = read_call(payload, fixture)
        times = read_times(payload)
        size_bytes = 0
        if scenario == "oversized":
            size_mb = read_number(payload, "size_mb", default=DEFAULT_OVERSIZED_MB, minimum=0.000_1)
            size_bytes = max(64, math.ceil(size_mb * 1024 * 1024))
        chunked = bool(payload.get("chunked", False))
        fault = Fault(scenario, times, call, size_bytes, chunked)  # type: ignore[arg-type]
        return lambda scope: setattr(scope, "fault", fault)
    if scenario == "slow":
        delay_ms = read_number(payload, "delay_ms", minimum=0)
        return lambda scope: setattr(scope, "delay_ms", delay_ms)
    if fixture is None:
        raise ControlError(400, f"scenario {scenario!r} needs a kind")
    if scenario == "error":
        case = read_str(payload, "case")
        if case is None or not fixture.has_error(case):
            raise ControlError(
                400,
                f"unknown error case {case!r} for {fixture.kind}; "
                f"cases: {fixture.cases()}, http_<status> or {', '.join(ECHO_ERRORS)}",
            )
        plan = ErrorPlan(case, read_times(payload), read_call(payload, fixture))
        return lambda scope: setattr(scope, "error", plan)
    if scenario == "variant":
        name = read_str(payload, "variant")
        if name is None or name not in fixture.variants:
            known = sorted(fixture.variants)
            raise ControlError(400, f"unknown variant {name!r} for {fixture.kind}; variants: {known}")
        call = read_call(payload, fixture) or next(iter(fixture.calls), None)
        if call is None:
            raise ControlError(400, f"{fixture.kind} has no call to replace")
        variant = Variant(name, call)
        return lambda scope: setattr(scope, "variant", variant)
    # drain or set (static never gets here: it clears the scope)
    if fixture.kind not in REWRITERS:
        reason = UNSUPPORTED.get(fixture.kind, "no rewriter")
        raise ControlError(400, f"{fixture.kind} cannot show a remaining percent: {reason}")
    exhausted = read_str(payload, "exhausted_error")
    if exhausted is not None and not fixture.has_error(exhausted):
        raise ControlError(400, f"unknown error case {exhausted!r} for {fixture.kind}")
    quota: Drain | Pinned
    if scenario == "drain":
        start_pct = read_number(payload, "start_pct", default=100.0, minimum=0, maximum=100)
        quota = Drain(
            drain_s=read_number(payload, "drain_s", minimum=0.001),
            reset_after_s=read_number(payload, "reset_after_s", default=0.0, minimum=0),
            start_pct=start_pct,
            end_pct=read_number(payload, "end_pct", default=0.0, minimum=0, maximum=start_pct),
            started_at=read_moment(payload, "started_at") if payload.get("started_at") else now,
            exhausted_error=exhausted,
        )
    else:
        quota = Pinned(
            remaining_pct=read_number(payload, "remaining_pct", minimum=0, maximum=100),
            reset_at=read_moment(payload, "reset_at") if payload.get("reset_at") else None,
            exhausted_error=exhausted,
        )
    return lambda scope: setattr(scope, "quota", quota)


def take_plan(scopes: list[Scope], attr: Literal["fault", "error"], call_name: str | None) -> Any:
    """The nearest matching one-shot plan; counts one use and drops it when used up (lock held)."""
    for scope in scopes:
        plan: Fault | ErrorPlan | None = getattr(scope, attr)
        if plan is None or (plan.call is not None and plan.call != call_name):
            continue
        if plan.remaining is not None:
            plan.remaining -= 1
            if plan.remaining <= 0:
                setattr(scope, attr, None)
        return plan
    return None
