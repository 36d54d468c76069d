"""Anthropic API keys (metered): passive ``anthropic-ratelimit-*`` headers; no quota endpoint."""

from __future__ import annotations

from dataclasses import replace

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter, ErrorReply, throttled
from ladder.providers.ratelimit import HeaderWindow


def _anthropic(name: str, bucket: str) -> HeaderWindow:
    prefix = f"anthropic-ratelimit-{bucket}"
    return HeaderWindow(
        name, f"{prefix}-limit", f"{prefix}-remaining", reset=f"{prefix}-reset", reset_relative=False
    )


class AnthropicApiAdapter(BaseAdapter):
    kind = "anthropic-api"
    provider = "anthropic"
    auth_type = "apikey"
    default_base_url = "https://api.anthropic.com"
    header_windows = (
        _anthropic("requests-minute", "requests"),
        _anthropic("input-tokens-minute", "input-tokens"),
        _anthropic("output-tokens-minute", "output-tokens"),
        _anthropic("tokens-minute", "tokens"),
    )

    def classify(self, reply: ErrorReply) -> Failure:
        detail = reply.message or reply.error_type
        if reply.status == 400 and "credit balance" in reply.message.lower():
            # Balance exhaustion arrives as a 400, not a 429.
            return Failure("quota_exhausted", detail=reply.message)
        if reply.status == 429:
            reading = self.read_headers(reply.headers, reply.now)
            spent = [w for w in reading.windows if w.remaining_pct <= 0] if reading else []
            reset_at = max((w.reset_at for w in spent if w.reset_at), default=None)
            failure = throttled(reply.wait_s, detail=detail, window=spent[0].name if spent else None)
            return replace(failure, reset_at=reset_at)
        return reply.by_status(detail)
