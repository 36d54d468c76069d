"""Tolerant readers for upstream JSON and headers: a wrong type is "absent", never an exception."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ladder.domain.types import Overage
from ladder.providers.timeparse import parse_number

JsonDict = dict[str, object]


def as_dict(value: object) -> JsonDict | None:
    return value if isinstance(value, dict) else None


def as_list(value: object) -> list[object] | None:
    return value if isinstance(value, list) else None


def as_dicts(value: object) -> list[JsonDict]:
    """The objects of a JSON array (other items skipped); [] when it is not an array."""
    return [item for item in as_list(value) or [] if isinstance(item, dict)]


def as_str(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


as_float = parse_number


def as_bool(value: object) -> bool | None:
    """JSON booleans and the "True"/"false" strings that some headers carry."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def overage_of(paid_spill: bool | None) -> Overage | None:
    """An upstream's "extra usage is on" flag as the observed overage; None when it says nothing."""
    if paid_spill is None:
        return None
    return "meters-to-paid" if paid_spill else "hard-stop"


def dig(value: object, *keys: str) -> object:
    """``value[k1][k2]…`` through nested objects; None as soon as a level is missing."""
    for key in keys:
        current = as_dict(value)
        if current is None:
            return None
        value = current.get(key)
    return value


def clamp_pct(value: float) -> float:
    return min(100.0, max(0.0, value))


def share_pct(part: float | None, whole: float | None) -> float | None:
    """``100 × part / whole`` within 0..100; None unless both are numbers and ``whole`` is positive."""
    if part is None or whole is None or whole <= 0:
        return None
    return clamp_pct(100.0 * part / whole)


def lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names are case-insensitive: look them up lower-cased."""
    return {str(name).lower(): str(value) for name, value in headers.items()}


def decode_body(body: object) -> object:
    """A failure body as given (already decoded JSON) or decoded from text/bytes when it is JSON."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def error_fields(body: object) -> tuple[str, str, str]:
    """``(type, code, message)`` of the usual error shapes (``{"error": {...}}`` or flat), lower-cased
    type/code and the message as sent; empty strings for what is absent."""
    error = as_dict(dig(body, "error")) or as_dict(body) or {}
    message = dig(body, "error") if isinstance(dig(body, "error"), str) else error.get("message")
    return (
        str(error.get("type") or "").lower(),
        str(error.get("code") or "").lower(),
        message if isinstance(message, str) else "",
    )


def window_name_for_seconds(seconds: float) -> str:
    """``18000`` → ``5h``, ``604800`` → ``7d``: a window named by its length, never by its position."""
    whole = round(seconds)
    if whole > 0 and whole % 86400 == 0:
        return f"{whole // 86400}d"
    if whole > 0 and whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole > 0 and whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s"
