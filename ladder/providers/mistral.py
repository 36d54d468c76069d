"""Mistral Experiment tier: passive per-minute and monthly headers, current and older families."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ErrorReply
from ladder.providers.ratelimit import HeaderWindow

# Assumed to be the UTC calendar month: the headers carry no reset for it.
MONTHLY = HeaderWindow(
    "tokens-month",
    "x-ratelimitbysize-limit-month",
    "x-ratelimitbysize-remaining-month",
    reset_period="monthly",
)


class MistralAdapter(BaseAdapter):
    kind = "mistral"
    provider = "mistral"
    auth_type = "apikey"
    default_base_url = "https://api.mistral.ai"
    header_windows = (
        HeaderWindow("requests-minute", "x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute"),
        HeaderWindow(
            "tokens-minute",
            "x-ratelimit-limit-tokens-minute",
            "x-ratelimit-remaining-tokens-minute",
            reset="ratelimitbysize-reset",
        ),
        # Older responses: the same per-minute token bucket without the x- prefix.
        HeaderWindow(
            "tokens-minute",
            "ratelimitbysize-limit",
            "ratelimitbysize-remaining",
            reset="ratelimitbysize-reset",
        ),
        MONTHLY,
    )

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        reading = super().read_headers(headers, now)
        if reading is None:
            return None
        # Keep the first of the two token-minute families that answered.
        first: dict[str, Window] = {}
        for window in reading.windows:
            first.setdefault(window.name, window)
        return Reading(now, tuple(first.values()), "headers")

    def classify(self, reply: ErrorReply) -> Failure:
        """Monthly cap exhaustion is also a 429: the monthly remaining header tells them apart."""
        monthly = MONTHLY.read(reply.headers, reply.now) if reply.status == 429 else None
        if monthly is not None and monthly.remaining_pct <= 0:
            return Failure(
                "quota_exhausted",
                window="tokens-month",
                reset_at=monthly.reset_at,
                retry_after_s=reply.wait_s,
                detail=reply.message,
            )
        return reply.by_status(reply.message or reply.code)
