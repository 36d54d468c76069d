"""Qwen Code OAuth: no quota endpoint (the free tier ended 2026-04-15); only the 429 tells.

The daily cap's reset time is not documented, so an exhaustion carries no reset: the caller backs
off and re-probes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure
from ladder.providers.base import BaseAdapter
from ladder.providers.openai_api import classify_openai_style


class QwenOAuthAdapter(BaseAdapter):
    kind = "qwen-oauth"
    provider = "qwen"
    auth_type = "oauth"

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        return classify_openai_style(status, headers, body, now)
