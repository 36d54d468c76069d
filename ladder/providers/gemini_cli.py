"""Gemini CLI / Code Assist OAuth: per-model quota buckets of ``retrieveUserQuota``."""

from __future__ import annotations

from datetime import datetime

from ladder.domain.types import Reading
from ladder.providers.base import poll_reading
from ladder.providers.google import CodeAssistAdapter, model_windows
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_dicts, as_float, as_list, as_str, dig


class GeminiCliAdapter(CodeAssistAdapter):
    kind = "gemini-cli"
    provider = "gemini-cli"
    usage_path = "/v1internal:retrieveUserQuota"
    metadata = {"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}

    def read_usage(self, body: object, now: datetime) -> Reading:
        """Each model's buckets (daily, per-minute…): the lowest binds."""
        if as_list(dig(body, "buckets")) is None:
            return poll_reading(now, problems=["no buckets list in the quota answer"])
        buckets: dict[str, list[tuple[float | None, datetime | None]]] = {}
        for bucket in as_dicts(dig(body, "buckets")):
            model = as_str(bucket.get("modelId"))
            if model is not None:
                fraction = as_float(bucket.get("remainingFraction"))
                buckets.setdefault(model, []).append((fraction, parse_time(bucket.get("resetTime"), now=now)))
        return model_windows(buckets, now, empty="no model bucket in the quota answer")
