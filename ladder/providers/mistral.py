"""Mistral Experiment tier: passive per-minute and monthly headers, current and older families."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, classify_by_status, header_retry_after_s, throttled
from ladder.providers.ratelimit import HeaderWindow, header_window, read_header_windows
from ladder.providers.values import decode_body, error_fields

HEADER_WINDOWS = (
    HeaderWindow("requests-minute", "x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute"),
    HeaderWindow(
        "tokens-minute",
        "x-ratelimit-limit-tokens-minute",
        "x-ratelimit-remaining-tokens-minute",
        reset="ratelimitbysize-reset",
    ),
    # Older responses: the same per-minute token bucket without the x- prefix.
    HeaderWindow(
        "tokens-minute", "ratelimitbysize-limit", "ratelimitbysize-remaining", reset="ratelimitbysize-reset"
    ),
    # Assumed to be the UTC calendar month: the headers carry no reset for it.
    HeaderWindow(
        "tokens-month",
        "x-ratelimitbysize-limit-month",
        "x-ratelimitbysize-remaining-month",
        reset_period="monthly",
    ),
)


class MistralAdapter(BaseAdapter):
    kind = "mistral"
    provider = "mistral"
    auth_type = "apikey"
    default_base_url = "https://api.mistral.ai"

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        reading = read_header_windows(HEADER_WINDOWS, headers, now)
        if reading is None:
            return None
        # Keep the first of the two token-minute families that answered.
        first: dict[str, Window] = {}
        for window in reading.windows:
            first.setdefault(window.name, window)
        return Reading(now, tuple(first.values()), "headers")

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        """Monthly cap exhaustion is also a 429: the monthly remaining header tells them apart."""
        _, code, message = error_fields(decode_body(body))
        if status != 429:
            return classify_by_status(status, headers, now, detail=message or code)
        monthly = header_window(HEADER_WINDOWS, "tokens-month", headers, now)
        wait = header_retry_after_s(headers, now)
        if monthly is not None and monthly.remaining_pct <= 0:
            return Failure(
                "quota_exhausted",
                window="tokens-month",
                reset_at=monthly.reset_at,
                retry_after_s=wait,
                detail=message,
            )
        return throttled(wait, detail=message or code or "HTTP 429")
