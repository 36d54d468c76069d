"""Qwen Code OAuth: no quota endpoint (the free tier ended 2026-04-15); only the 429 tells.

The daily cap's reset time is not documented, so an exhaustion carries no reset: the caller backs
off and re-probes.
"""

from __future__ import annotations

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter, ErrorReply
from ladder.providers.openai_api import classify_openai_style


class QwenOAuthAdapter(BaseAdapter):
    kind = "qwen-oauth"
    provider = "qwen"
    auth_type = "oauth"

    def classify(self, reply: ErrorReply) -> Failure:
        return classify_openai_style(reply)
