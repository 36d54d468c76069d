"""OpenAI API keys (metered): passive ``x-ratelimit-*`` headers with Go durations; no quota endpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, classify_by_status, header_retry_after_s, throttled
from ladder.providers.ratelimit import read_header_windows, x_ratelimit
from ladder.providers.timeparse import parse_duration_s
from ladder.providers.values import decode_body, error_fields

HEADER_WINDOWS = (x_ratelimit("requests-minute", "requests"), x_ratelimit("tokens-minute", "tokens"))
_TRY_AGAIN = re.compile(r"try again in ([0-9][0-9.hms]*)", re.IGNORECASE)


def try_again_in_s(message: str) -> float | None:
    """``"Please try again in 9m38.016s."`` → 578.016 (OpenAI, Groq)."""
    match = _TRY_AGAIN.search(message)
    return None if match is None else parse_duration_s(match[1].rstrip("."))


def classify_openai_style(status: int, headers: Mapping[str, str], body: object, now: datetime) -> Failure:
    """``insufficient_quota`` is billing exhaustion; any other 429 is throttling
    unless it asks for a long wait (OpenAI, Qwen)."""
    error_type, code, message = error_fields(decode_body(body))
    if "insufficient_quota" in (error_type, code):
        return Failure("quota_exhausted", detail=message or "insufficient_quota")
    if status == 429:
        wait = header_retry_after_s(headers, now)
        return throttled(wait if wait is not None else try_again_in_s(message), detail=message or "HTTP 429")
    return classify_by_status(status, headers, now, detail=message or error_type)


class OpenAIApiAdapter(BaseAdapter):
    kind = "openai-api"
    provider = "openai"
    auth_type = "apikey"
    default_base_url = "https://api.openai.com"

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        return read_header_windows(HEADER_WINDOWS, headers, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        return classify_openai_style(status, headers, body, now)
