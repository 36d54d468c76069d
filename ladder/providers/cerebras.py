"""Cerebras free tier: passive per-day request and per-minute token headers, resets in float seconds."""

from __future__ import annotations

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter, ErrorReply, throttled
from ladder.providers.ratelimit import x_ratelimit
from ladder.providers.timeparse import parse_duration_s

DAILY = x_ratelimit("requests-day", "requests-day")


class CerebrasAdapter(BaseAdapter):
    kind = "cerebras"
    provider = "cerebras"
    auth_type = "apikey"
    default_base_url = "https://api.cerebras.ai"
    header_windows = (DAILY, x_ratelimit("tokens-minute", "tokens-minute"))

    def classify(self, reply: ErrorReply) -> Failure:
        """The daily request bucket at 0 is exhaustion until its reset; the minute bucket is throttling."""
        detail = reply.message or reply.code
        if reply.status != 429:
            return reply.by_status(detail)
        daily = DAILY.read(reply.headers, reply.now)
        if (
            reply.code == "request_quota_exceeded"
            or "per day" in reply.message.lower()
            or (daily and daily.remaining_pct <= 0)
        ):
            return Failure(
                "quota_exhausted",
                window="requests-day",
                reset_at=daily.reset_at if daily else None,
                retry_after_s=parse_duration_s(reply.headers.get("x-ratelimit-reset-requests-day")),
                detail=detail,
            )
        wait = reply.wait_s
        if wait is None:
            wait = parse_duration_s(reply.headers.get("x-ratelimit-reset-tokens-minute"))
        return throttled(wait, detail=detail)
