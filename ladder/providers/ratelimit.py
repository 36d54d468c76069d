"""Passive ``x-ratelimit-*`` / ``anthropic-ratelimit-*`` headers of metered and free API keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from ladder.domain.types import Window
from ladder.providers.timeparse import next_utc_boundary, parse_time
from ladder.providers.values import as_float, clamp_pct


@dataclass(frozen=True)
class HeaderWindow:
    """Where one window's limit, remaining and reset live in a response's headers."""

    name: str
    limit: str
    remaining: str
    reset: str | None = None
    # Seconds or a Go duration from now (most providers); False for absolute RFC 3339 (Anthropic).
    reset_relative: bool = True
    # A calendar period whose next UTC start is the reset when no header says it (Mistral's month).
    reset_period: str | None = None

    def read(self, headers: Mapping[str, str], now: datetime) -> Window | None:
        """Remaining 0 is 0 % even without a limit; otherwise both numbers are needed."""
        limit = as_float(headers.get(self.limit))
        remaining = as_float(headers.get(self.remaining))
        if remaining is None:
            return None
        if remaining <= 0:
            pct = 0.0
        elif limit is not None and limit > 0:
            pct = clamp_pct(100.0 * remaining / limit)
        else:
            return None
        reset_at = None
        if self.reset is not None:
            reset_at = parse_time(headers.get(self.reset), now=now, relative=self.reset_relative)
        if reset_at is None and self.reset_period is not None:
            reset_at = next_utc_boundary(self.reset_period, now=now)
        return Window(self.name, pct, reset_at)


def x_ratelimit(name: str, suffix: str) -> HeaderWindow:
    """The OpenAI-style triple ``x-ratelimit-{limit,remaining,reset}-<suffix>``."""
    limit, remaining, reset = (f"x-ratelimit-{field}-{suffix}" for field in ("limit", "remaining", "reset"))
    return HeaderWindow(name, limit, remaining, reset)
