"""What Gemini Code Assist and Antigravity share: the Code Assist project and google.rpc errors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from ladder.domain.types import Failure
from ladder.providers.base import LONG_RETRY_S, ConnectionRef, Unverifiable, Upstream, classify_by_status
from ladder.providers.timeparse import parse_duration_s, parse_time
from ladder.providers.values import JsonDict, as_dict, as_dicts, as_str, decode_body, dig

DEFAULT_BASE_URL = "https://cloudcode-pa.googleapis.com"
LOAD_CODE_ASSIST_PATH = "/v1internal:loadCodeAssist"
# gemini-cli's defaults when a retryable error names no delay.
RATE_LIMIT_DEFAULT_S = 10.0
PER_MINUTE_DEFAULT_S = 60.0
# The account must act (verify, migrate tier): retrying cannot help.
ACCOUNT_ACTION_REASONS = ("VALIDATION_REQUIRED", "UNSUPPORTED_CLIENT", "INELIGIBLE_TIER")
_RETRY_IN = re.compile(r"retry in ([0-9][0-9.hms]*)", re.IGNORECASE)


def code_assist_project(
    upstream: Upstream, connection: ConnectionRef, headers: Mapping[str, str], metadata: Mapping[str, str]
) -> str:
    """The connection's project, else the one ``loadCodeAssist`` assigns.

    Never poll without a project: the default view reads 1.0 everywhere.
    """
    known = connection.params.get("project")
    if known:
        return known
    body = upstream.json(
        "POST", LOAD_CODE_ASSIST_PATH, headers=headers, json_body={"metadata": dict(metadata)}
    )
    project = dig(body, "cloudaicompanionProject")
    found = as_str(project) or as_str(dig(project, "id"))
    if found is None:
        raise Unverifiable("loadCodeAssist named no cloudaicompanionProject")
    return found


def _detail(details: list[JsonDict], type_suffix: str) -> JsonDict:
    return next((d for d in details if str(d.get("@type", "")).endswith(type_suffix)), {})


def classify_google_rpc(status: int, headers: Mapping[str, str], body: object, now: datetime) -> Failure:
    """gemini-cli's ``classifyGoogleError``: terminal on QUOTA_EXHAUSTED, a per-day quota id or a
    retry delay over 5 minutes; retryable on RATE_LIMIT_EXCEEDED, per-minute ids and short delays."""
    error = as_dict(dig(decode_body(body), "error")) or {}
    message = as_str(error.get("message")) or ""
    details = as_dicts(error.get("details"))
    info = _detail(details, "google.rpc.ErrorInfo")
    reason = (as_str(info.get("reason")) or "").upper()
    metadata = as_dict(info.get("metadata")) or {}
    model = as_str(metadata.get("model"))
    quota_ids = [
        str(v.get("quotaId", ""))
        for v in as_dicts(_detail(details, "google.rpc.QuotaFailure").get("violations"))
    ]
    retry_in = _RETRY_IN.search(message)
    delays = (
        _detail(details, "google.rpc.RetryInfo").get("retryDelay"),
        metadata.get("quotaResetDelay"),
        retry_in[1].rstrip(".") if retry_in else None,
    )
    wait = next((s for s in map(parse_duration_s, delays) if s is not None), None)
    reset_at = parse_time(metadata.get("quotaResetTimeStamp"), now=now)
    if reset_at is None and wait is not None:
        reset_at = now + timedelta(seconds=wait)
    detail = f"{reason or status}: {message}".strip(": ")

    if reason in ACCOUNT_ACTION_REASONS or "IneligibleTier" in message:
        return Failure("auth_failed", detail=detail)
    if reason == "INSUFFICIENT_G1_CREDITS_BALANCE":
        return Failure("quota_exhausted", window=model, detail=f"AI credits exhausted; {detail}")
    per_day = any("perday" in q.lower() or "daily" in q.lower() for q in quota_ids)
    if reason == "QUOTA_EXHAUSTED" or per_day:
        return Failure("quota_exhausted", window=model, reset_at=reset_at, retry_after_s=wait, detail=detail)
    per_minute = any("perminute" in q.lower() for q in quota_ids)
    if reason == "RATE_LIMIT_EXCEEDED" or per_minute or status == 429:
        if wait is None and reason == "RATE_LIMIT_EXCEEDED":
            wait = RATE_LIMIT_DEFAULT_S
        elif wait is None and per_minute:
            wait = PER_MINUTE_DEFAULT_S
        if wait is not None and wait > LONG_RETRY_S:
            return Failure(
                "quota_exhausted", window=model, reset_at=reset_at, retry_after_s=wait, detail=detail
            )
        return Failure("rate_limited", window=model, retry_after_s=wait, detail=detail)
    return classify_by_status(status, headers, now, detail=detail)
