"""Anthropic API keys (metered): passive ``anthropic-ratelimit-*`` headers; no quota endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, classify_by_status, header_retry_after_s, throttled
from ladder.providers.ratelimit import HeaderWindow, read_header_windows
from ladder.providers.values import decode_body, error_fields


def _anthropic(name: str, bucket: str) -> HeaderWindow:
    prefix = f"anthropic-ratelimit-{bucket}"
    return HeaderWindow(
        name, f"{prefix}-limit", f"{prefix}-remaining", reset=f"{prefix}-reset", reset_relative=False
    )


HEADER_WINDOWS = (
    _anthropic("requests-minute", "requests"),
    _anthropic("input-tokens-minute", "input-tokens"),
    _anthropic("output-tokens-minute", "output-tokens"),
    _anthropic("tokens-minute", "tokens"),
)


class AnthropicApiAdapter(BaseAdapter):
    kind = "anthropic-api"
    provider = "anthropic"
    auth_type = "apikey"
    default_base_url = "https://api.anthropic.com"

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        return read_header_windows(HEADER_WINDOWS, headers, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        error_type, _, message = error_fields(decode_body(body))
        if status == 400 and "credit balance" in message.lower():
            # Balance exhaustion arrives as a 400, not a 429.
            return Failure("quota_exhausted", detail=message)
        if status == 429:
            reading = read_header_windows(HEADER_WINDOWS, headers, now)
            spent = [w for w in reading.windows if w.remaining_pct <= 0] if reading else []
            reset_at = max((w.reset_at for w in spent if w.reset_at), default=None)
            wait = header_retry_after_s(headers, now)
            failure = throttled(wait, detail=message or error_type, window=spent[0].name if spent else None)
            return replace(failure, reset_at=reset_at)
        return classify_by_status(status, headers, now, detail=message or error_type)
