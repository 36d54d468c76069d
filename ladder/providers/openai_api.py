"""OpenAI API keys (metered): passive ``x-ratelimit-*`` headers with Go durations; no quota endpoint."""

from __future__ import annotations

import re

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter, ErrorReply, throttled
from ladder.providers.ratelimit import x_ratelimit
from ladder.providers.timeparse import parse_duration_s

_TRY_AGAIN = re.compile(r"try again in ([0-9][0-9.hms]*)", re.IGNORECASE)


def try_again_in_s(message: str) -> float | None:
    """``"Please try again in 9m38.016s."`` → 578.016 (OpenAI, Groq)."""
    match = _TRY_AGAIN.search(message)
    return None if match is None else parse_duration_s(match[1].rstrip("."))


def classify_openai_style(reply: ErrorReply) -> Failure:
    """``insufficient_quota`` is billing exhaustion; any other 429 is throttling
    unless it asks for a long wait (OpenAI, Qwen)."""
    if "insufficient_quota" in (reply.error_type, reply.code):
        return Failure("quota_exhausted", detail=reply.message or "insufficient_quota")
    if reply.status == 429:
        wait = reply.wait_s
        wait = wait if wait is not None else try_again_in_s(reply.message)
        return throttled(wait, detail=reply.message or "HTTP 429")
    return reply.by_status(reply.message or reply.error_type)


class OpenAIApiAdapter(BaseAdapter):
    kind = "openai-api"
    provider = "openai"
    auth_type = "apikey"
    default_base_url = "https://api.openai.com"
    header_windows = (x_ratelimit("requests-minute", "requests"), x_ratelimit("tokens-minute", "tokens"))

    def classify(self, reply: ErrorReply) -> Failure:
        return classify_openai_style(reply)
