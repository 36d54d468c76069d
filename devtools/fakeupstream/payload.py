"""The control API's JSON bodies: read one parameter, or refuse the body with a 400 naming it."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from devtools.fakeupstream.fixtures import KindFixture


class ControlError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def read_str(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ControlError(400, f"{name} must be a string")
    return value


def read_number(
    payload: dict[str, Any],
    name: str,
    *,
    default: float | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    value = payload.get(name, default)
    if value is None:
        raise ControlError(400, f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ControlError(400, f"{name} must be a number")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ControlError(400, f"{name} must lie in [{minimum}, {maximum}]")
    return float(value)


def read_times(payload: dict[str, Any]) -> int | None:
    value = payload.get("times")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ControlError(400, "times must be a positive integer or null (until cleared)")
    return value


def read_call(payload: dict[str, Any], fixture: KindFixture | None) -> str | None:
    call = read_str(payload, "call")
    if call is None:
        return None
    if fixture is None:
        raise ControlError(400, "call needs a kind")
    if call not in fixture.calls:
        raise ControlError(400, f"unknown call {call!r} for {fixture.kind}; calls: {sorted(fixture.calls)}")
    return call


def read_moment(payload: dict[str, Any], name: str) -> datetime:
    value = payload.get(name)
    if not isinstance(value, str):
        raise ControlError(400, f"{name} must be an ISO-8601 string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ControlError(400, f"{name}: {exc}") from exc
    if moment.tzinfo is None:
        raise ControlError(400, f"{name} needs a zone (e.g. Z)")
    return moment.astimezone(UTC)
