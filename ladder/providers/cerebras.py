"""Cerebras free tier: passive per-day request and per-minute token headers, resets in float seconds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, classify_by_status, header_retry_after_s, throttled
from ladder.providers.ratelimit import header_window, read_header_windows, x_ratelimit
from ladder.providers.timeparse import parse_duration_s
from ladder.providers.values import decode_body, error_fields, lower_headers

HEADER_WINDOWS = (
    x_ratelimit("requests-day", "requests-day"),
    x_ratelimit("tokens-minute", "tokens-minute"),
)


class CerebrasAdapter(BaseAdapter):
    kind = "cerebras"
    provider = "cerebras"
    auth_type = "apikey"
    default_base_url = "https://api.cerebras.ai"

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        return read_header_windows(HEADER_WINDOWS, headers, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        """The daily request bucket at 0 is exhaustion until its reset; the minute bucket is throttling."""
        _, code, message = error_fields(decode_body(body))
        if status != 429:
            return classify_by_status(status, headers, now, detail=message or code)
        lowered = lower_headers(headers)
        daily = header_window(HEADER_WINDOWS, "requests-day", lowered, now)
        if (
            code == "request_quota_exceeded"
            or "per day" in message.lower()
            or (daily and daily.remaining_pct <= 0)
        ):
            return Failure(
                "quota_exhausted",
                window="requests-day",
                reset_at=daily.reset_at if daily else None,
                retry_after_s=parse_duration_s(lowered.get("x-ratelimit-reset-requests-day")),
                detail=message or code,
            )
        wait = header_retry_after_s(headers, now)
        if wait is None:
            wait = parse_duration_s(lowered.get("x-ratelimit-reset-tokens-minute"))
        return throttled(wait, detail=message or code)
