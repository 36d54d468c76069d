"""Antigravity (Google AI Pro/Ultra): per-model ``quotaInfo`` of ``fetchAvailableModels``.

``retrieveUserQuota`` covers only Gemini models, hence this call. Observed overage stays unknown:
the AI-credit spill happens only for requests sent with ``enabledCreditTypes``, which the poll
cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, Upstream
from ladder.providers.google import DEFAULT_BASE_URL, classify_google_rpc, code_assist_project
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_bool, as_dict, as_float, clamp_pct, dig

MODELS_PATH = "/v1internal:fetchAvailableModels"
METADATA = {"ideName": "antigravity", "extensionName": "antigravity", "locale": "en", "ideVersion": "unknown"}


def parse_models(body: object, now: datetime) -> Reading:
    """One window per routable model, scoped to it; internal and tab-completion models are skipped,
    a missing fraction is unknown (never 0), fraction 1.0 without a reset is unlimited."""
    models = as_dict(dig(body, "models"))
    if models is None:
        return Reading(now, (), "poll", verifiable=False, note="no models object in the answer")
    windows: list[Window] = []
    unknown: list[str] = []
    for model_id, model in models.items():
        if as_bool(dig(model, "isInternal")) or model_id.startswith("tab_"):
            continue
        fraction = as_float(dig(model, "quotaInfo", "remainingFraction"))
        if fraction is None:
            unknown.append(model_id)
            continue
        reset_at = parse_time(dig(model, "quotaInfo", "resetTime"), now=now)
        windows.append(Window(model_id, clamp_pct(100.0 * fraction), reset_at, scope_models=(model_id,)))
    note = f"no remainingFraction for {', '.join(unknown)}" if unknown else ""
    if not windows:
        return Reading(now, (), "poll", verifiable=False, note=note or "no model quota in the answer")
    return Reading(now, tuple(windows), "poll", note=note)


class AntigravityAdapter(BaseAdapter):
    kind = "antigravity"
    provider = "antigravity"
    auth_type = "oauth"
    default_base_url = DEFAULT_BASE_URL
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {
            "Authorization": f"Bearer {connection.credential}",
            "Content-Type": "application/json",
            "User-Agent": "antigravity",
        }
        project = code_assist_project(upstream, connection, headers, METADATA)
        body = upstream.json("POST", MODELS_PATH, headers=headers, json_body={"project": project})
        return parse_models(body, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        return classify_google_rpc(status, headers, body, now)
