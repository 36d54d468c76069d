"""Groq free tier: passive headers (requests are per day, tokens per minute); no quota endpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, classify_by_status, header_retry_after_s, throttled
from ladder.providers.openai_api import try_again_in_s
from ladder.providers.ratelimit import read_header_windows, x_ratelimit
from ladder.providers.values import decode_body, error_fields

HEADER_WINDOWS = (x_ratelimit("requests-day", "requests"), x_ratelimit("tokens-minute", "tokens"))
# The 429 message names the window: "on tokens per day (TPD)", "requests per minute (RPM)"…
_PER_WINDOW = re.compile(r"(tokens|requests) per (day|minute)", re.IGNORECASE)


class GroqAdapter(BaseAdapter):
    kind = "groq"
    provider = "groq"
    auth_type = "apikey"
    default_base_url = "https://api.groq.com"

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        return read_header_windows(HEADER_WINDOWS, headers, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        _, _, message = error_fields(decode_body(body))
        if status != 429:
            return classify_by_status(status, headers, now, detail=message)
        wait = try_again_in_s(message)
        if wait is None:
            wait = header_retry_after_s(headers, now)
        match = _PER_WINDOW.search(message)
        if match and match[2].lower() == "day":
            window = f"{match[1].lower()}-day"
            reset_at = now + timedelta(seconds=wait) if wait is not None else None
            return Failure(
                "quota_exhausted", window=window, reset_at=reset_at, retry_after_s=wait, detail=message
            )
        return throttled(wait, detail=message or "HTTP 429")
