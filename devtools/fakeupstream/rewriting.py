"""What a rewriter gets (the quota to show, the response being prepared) and the helpers every
rewriter uses to find a body's fields and write numbers and times the way the fixture writes them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from devtools.fakeupstream.timeshift import format_like

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Quota:
    remaining_pct: float
    reset_at: datetime | None
    now: datetime

    @property
    def used_pct(self) -> float:
        return 100.0 - self.remaining_pct

    @property
    def seconds_to_reset(self) -> float | None:
        if self.reset_at is None:
            return None
        return max(0.0, (self.reset_at - self.now).total_seconds())


@dataclass
class Served:
    """A response being prepared: mutable, a private copy."""

    status: int
    headers: dict[str, str]
    body: Any


RewriteFn = Callable[[Served, Quota], None]


@dataclass(frozen=True)
class KindRewriter:
    rewrite: RewriteFn
    # Calls that read the quota; an exhaustion error never replaces them (they answer 0 % instead).
    poll_calls: frozenset[str]


def apply_exhaustion_extras(served: Served, quota: Quota) -> None:
    """On an error served because the plan is spent, make ``retry-after`` point at the reset."""
    wait_s = quota.seconds_to_reset
    if wait_s is not None and "retry-after" in served.headers:
        served.headers["retry-after"] = str(math.ceil(wait_s))


# --- finding a body's fields, writing values the way the fixture writes them -------------------------


def as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def dict_at(value: Any, *keys: str) -> dict[str, Any] | None:
    for key in keys:
        node = as_dict(value)
        if node is None:
            return None
        value = node.get(key)
    return as_dict(value)


def number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def like(template: Any, value: float) -> Any:
    """``value`` with the JSON type of ``template`` (int stays int, numeric string stays string)."""
    if isinstance(template, int) and not isinstance(template, bool):
        return round(value)
    if isinstance(template, str):
        return str(round(value)) if "." not in template else f"{value:.{len(template.split('.')[1])}f}"
    return float(round(value, 4))


def share(total: float, pct: float) -> float:
    return total * pct / 100.0


def epoch_s(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(seconds=1)


def epoch_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def iso_like(template: Any, moment: datetime) -> str:
    return format_like(template if isinstance(template, str) else "2000-01-01T00:00:00Z", moment)


def go_duration(seconds: float) -> str:
    """A Go ``time.Duration`` string (``1m26.4s``, ``644ms``, ``6m0s``), as Groq and OpenAI send."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:.3f}".rstrip("0").rstrip(".") + "ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    secs_text = f"{secs:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{int(hours)}h{int(minutes)}m{secs_text}s"
    if minutes:
        return f"{int(minutes)}m{secs_text}s"
    return f"{secs_text}s"


def remaining_headers(headers: dict[str, str], pairs: list[tuple[str, str]], pct: float) -> None:
    for limit_key, remaining_key in pairs:
        limit = number(headers.get(limit_key))
        if limit is not None and remaining_key in headers:
            headers[remaining_key] = str(round(share(limit, pct)))


def reset_headers(headers: dict[str, str], keys: list[str], write: Callable[[str], str]) -> None:
    for key in keys:
        if key in headers:
            headers[key] = write(headers[key])
