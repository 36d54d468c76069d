"""Groq free tier: passive headers (requests are per day, tokens per minute); no quota endpoint."""

from __future__ import annotations

import re
from datetime import timedelta

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter, ErrorReply, throttled
from ladder.providers.openai_api import try_again_in_s
from ladder.providers.ratelimit import x_ratelimit

# The 429 message names the window: "on tokens per day (TPD)", "requests per minute (RPM)"…
_PER_WINDOW = re.compile(r"(tokens|requests) per (day|minute)", re.IGNORECASE)


class GroqAdapter(BaseAdapter):
    kind = "groq"
    provider = "groq"
    auth_type = "apikey"
    default_base_url = "https://api.groq.com"
    header_windows = (x_ratelimit("requests-day", "requests"), x_ratelimit("tokens-minute", "tokens"))

    def classify(self, reply: ErrorReply) -> Failure:
        message = reply.message
        if reply.status != 429:
            return reply.by_status(message)
        wait = try_again_in_s(message)
        if wait is None:
            wait = reply.wait_s
        match = _PER_WINDOW.search(message)
        if match and match[2].lower() == "day":
            window = f"{match[1].lower()}-day"
            reset_at = reply.now + timedelta(seconds=wait) if wait is not None else None
            return Failure(
                "quota_exhausted", window=window, reset_at=reset_at, retry_after_s=wait, detail=message
            )
        return throttled(wait, detail=message or "HTTP 429")
