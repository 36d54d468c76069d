"""Antigravity (Google AI Pro/Ultra): per-model ``quotaInfo`` of ``fetchAvailableModels``.

``retrieveUserQuota`` covers only Gemini models, hence this call. Observed overage stays unknown:
the AI-credit spill happens only for requests sent with ``enabledCreditTypes``, which the poll
cannot see.
"""

from __future__ import annotations

from datetime import datetime

from ladder.domain.types import Reading
from ladder.providers.base import poll_reading
from ladder.providers.google import CodeAssistAdapter, model_windows
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_bool, as_dict, as_float, dig


class AntigravityAdapter(CodeAssistAdapter):
    kind = "antigravity"
    provider = "antigravity"
    usage_path = "/v1internal:fetchAvailableModels"
    usage_headers = {"Content-Type": "application/json", "User-Agent": "antigravity"}
    metadata = {
        "ideName": "antigravity",
        "extensionName": "antigravity",
        "locale": "en",
        "ideVersion": "unknown",
    }

    def read_usage(self, body: object, now: datetime) -> Reading:
        """Routable models only: internal and tab-completion models are skipped; fraction 1.0
        without a reset is unlimited."""
        models = as_dict(dig(body, "models"))
        if models is None:
            return poll_reading(now, problems=["no models object in the answer"])
        fractions = {
            model_id: [
                (
                    as_float(dig(model, "quotaInfo", "remainingFraction")),
                    parse_time(dig(model, "quotaInfo", "resetTime"), now=now),
                )
            ]
            for model_id, model in models.items()
            if not as_bool(dig(model, "isInternal")) and not model_id.startswith("tab_")
        }
        return model_windows(fractions, now, empty="no model quota in the answer")
