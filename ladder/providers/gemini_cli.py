"""Gemini CLI / Code Assist OAuth: per-model quota buckets of ``retrieveUserQuota``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, Upstream
from ladder.providers.google import DEFAULT_BASE_URL, classify_google_rpc, code_assist_project
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_dicts, as_float, as_list, as_str, clamp_pct, dig

QUOTA_PATH = "/v1internal:retrieveUserQuota"
METADATA = {"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}


def parse_buckets(body: object, now: datetime) -> Reading:
    """One window per model, scoped to it: the lowest of its buckets (daily, per-minute…) binds.

    A model with a bucket lacking ``remainingFraction`` is unknown and gets no window.
    """
    if as_list(dig(body, "buckets")) is None:
        return Reading(now, (), "poll", verifiable=False, note="no buckets list in the quota answer")
    buckets: dict[str, list[tuple[float | None, datetime | None]]] = {}
    for bucket in as_dicts(dig(body, "buckets")):
        model = as_str(bucket.get("modelId"))
        if model is not None:
            fraction = as_float(bucket.get("remainingFraction"))
            buckets.setdefault(model, []).append((fraction, parse_time(bucket.get("resetTime"), now=now)))
    windows: list[Window] = []
    unknown: list[str] = []
    for model, entries in buckets.items():
        known = [(fraction, reset_at) for fraction, reset_at in entries if fraction is not None]
        if len(known) < len(entries):
            unknown.append(model)
            continue
        fraction, reset_at = min(known, key=lambda entry: entry[0])
        windows.append(Window(model, clamp_pct(100.0 * fraction), reset_at, scope_models=(model,)))
    note = f"no remainingFraction for {', '.join(unknown)}" if unknown else ""
    if not windows:
        return Reading(now, (), "poll", verifiable=False, note=note or "no model bucket in the quota answer")
    return Reading(now, tuple(windows), "poll", note=note)


class GeminiCliAdapter(BaseAdapter):
    kind = "gemini-cli"
    provider = "gemini-cli"
    auth_type = "oauth"
    default_base_url = DEFAULT_BASE_URL
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {"Authorization": f"Bearer {connection.credential}", "Content-Type": "application/json"}
        project = code_assist_project(upstream, connection, headers, METADATA)
        body = upstream.json("POST", QUOTA_PATH, headers=headers, json_body={"project": project})
        return parse_buckets(body, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        return classify_google_rpc(status, headers, body, now)
