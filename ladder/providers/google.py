"""What Gemini Code Assist and Antigravity share: the Code Assist project, per-model quota windows
and google.rpc errors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import ClassVar

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import (
    LONG_RETRY_S,
    BaseAdapter,
    ConnectionRef,
    ErrorReply,
    Unverifiable,
    Upstream,
    poll_reading,
)
from ladder.providers.timeparse import parse_duration_s, parse_time
from ladder.providers.values import JsonDict, as_dict, as_dicts, as_str, clamp_pct, dig

LOAD_CODE_ASSIST_PATH = "/v1internal:loadCodeAssist"
# gemini-cli's wait for a per-minute quota that names no delay.
PER_MINUTE_S = 60.0
# The account must act (verify, migrate tier): retrying cannot help.
ACCOUNT_ACTION_REASONS = ("VALIDATION_REQUIRED", "UNSUPPORTED_CLIENT", "INELIGIBLE_TIER")
_RETRY_IN = re.compile(r"retry in ([0-9][0-9.hms]*)", re.IGNORECASE)


class CodeAssistAdapter(BaseAdapter):
    """A Code Assist kind: its quota call names the account's project; its errors are google.rpc."""

    auth_type = "oauth"
    default_base_url = "https://cloudcode-pa.googleapis.com"
    usage_method = "POST"
    usage_headers = {"Content-Type": "application/json"}
    metadata: ClassVar[Mapping[str, str]]  # the client ``loadCodeAssist`` is told about

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        """The connection's project, else the one ``loadCodeAssist`` assigns; never poll without
        one: the default view reads 1.0 everywhere."""
        headers = {**self.auth_headers(connection), **self.usage_headers}
        project = connection.params.get("project")
        if not project:
            body = upstream.json(
                "POST", LOAD_CODE_ASSIST_PATH, headers=headers, json_body={"metadata": dict(self.metadata)}
            )
            found = dig(body, "cloudaicompanionProject")
            project = as_str(found) or as_str(dig(found, "id"))
            if project is None:
                raise Unverifiable("loadCodeAssist named no cloudaicompanionProject")
        body = upstream.json("POST", str(self.usage_path), headers=headers, json_body={"project": project})
        return self.read_usage(body, now)

    def classify(self, reply: ErrorReply) -> Failure:
        return classify_google_rpc(reply)


def model_windows(
    fractions: Mapping[str, list[tuple[float | None, datetime | None]]], now: datetime, *, empty: str
) -> Reading:
    """One window per model, scoped to it: the lowest of its ``(remainingFraction, reset)`` binds. A
    model with a fraction missing is unknown (never 0) and gets no window; ``empty`` says none came."""
    windows: list[Window] = []
    unknown: list[str] = []
    for model, entries in fractions.items():
        known = [(fraction, reset_at) for fraction, reset_at in entries if fraction is not None]
        if len(known) < len(entries):
            unknown.append(model)
            continue
        fraction, reset_at = min(known, key=lambda entry: entry[0])
        windows.append(Window(model, clamp_pct(100.0 * fraction), reset_at, scope_models=(model,)))
    notes = [f"no remainingFraction for {', '.join(unknown)}"] if unknown else []
    if not windows:
        return poll_reading(now, problems=notes or [empty])
    return poll_reading(now, windows, notes=notes)


def _detail(details: list[JsonDict], type_suffix: str) -> JsonDict:
    return next((d for d in details if str(d.get("@type", "")).endswith(type_suffix)), {})


# Statuses gemini-cli reads as quota answers: a 499 (client closed) is retried like a 429. Its 503
# is retried too, which a transient ``upstream_error`` already means here.
QUOTA_STATUSES = (429, 499)
CLOUD_CODE_DOMAIN = "cloudcode-pa.googleapis.com"
_LIMIT_ZERO = re.compile(r"limit:\s*0(?!\d|\.\d)", re.IGNORECASE)
# "Your quota will reset after 1h43m56s." (Antigravity, Cloud Code): a Go-style duration.
_RESET_AFTER = re.compile(r"reset after ([0-9][0-9.hms]*)", re.IGNORECASE)
_REASONS_IN_TEXT = re.compile(r"\b(QUOTA_EXHAUSTED|RATE_LIMIT_EXCEEDED)\b")


def _message_delay_s(message: str) -> float | None:
    """A wait written in the message: "Please retry in 5s", "reset after 1h43m56s"."""
    for pattern in (_RETRY_IN, _RESET_AFTER):
        found = pattern.search(message)
        seconds = parse_duration_s(found[1].rstrip(".")) if found else None
        if seconds is not None:
            return seconds
    return None


def classify_google_rpc(reply: ErrorReply) -> Failure:
    """gemini-cli's ``classifyGoogleError`` (packages/core/src/utils/googleQuotaErrors.ts), in its order.

    | signal | reading |
    | --- | --- |
    | VALIDATION_REQUIRED, UNSUPPORTED_CLIENT, INELIGIBLE_TIER | ``auth_failed`` (the account must act) |
    | ``limit: 0`` in the message | ``quota_exhausted`` (no quota on this tier) |
    | QuotaFailure id naming a day (``PerDay``, ``Daily``) | ``quota_exhausted`` |
    | INSUFFICIENT_G1_CREDITS_BALANCE | ``quota_exhausted`` (AI credits spent) |
    | QUOTA_EXHAUSTED (ErrorInfo reason, or the bare message) | ``quota_exhausted`` |
    | RATE_LIMIT_EXCEEDED from Cloud Code without a delay | ``quota_exhausted`` (terminal in gemini-cli) |
    | any delay over 300 s | ``quota_exhausted`` for that long |
    | a delay up to 300 s (RetryInfo, then the message) | ``rate_limited`` for that long |
    | per-minute QuotaFailure id or ErrorInfo ``quota_limit`` | ``rate_limited`` for 60 s |
    | any other 429 or 499 | ``rate_limited`` without a delay |

    Delays: RetryInfo ``retryDelay``, else the message ("Please retry in 5s", "Your quota will reset
    after 1h43m56s."), else ``quotaResetDelay``. A 503 MODEL_CAPACITY_EXHAUSTED is the server's
    capacity, not the account's quota: a transient upstream error.
    """
    status, now = reply.status, reply.now
    error = as_dict(dig(reply.body, "error")) or {}
    message = as_str(error.get("message")) or ""
    details = as_dicts(error.get("details"))
    info = _detail(details, "google.rpc.ErrorInfo")
    text_reason = _REASONS_IN_TEXT.fullmatch(message.strip())
    reason = (as_str(info.get("reason")) or (text_reason[1] if text_reason else "")).upper()
    domain = re.sub(r"[^a-zA-Z0-9.-]", "", as_str(info.get("domain")) or "")
    metadata = as_dict(info.get("metadata")) or {}
    model = as_str(metadata.get("model"))
    quota_ids = [
        str(v.get("quotaId", ""))
        for v in as_dicts(_detail(details, "google.rpc.QuotaFailure").get("violations"))
    ]
    quota_limit = str(metadata.get("quota_limit") or "")
    retry_info = parse_duration_s(_detail(details, "google.rpc.RetryInfo").get("retryDelay"))
    wait = retry_info if retry_info is not None else _message_delay_s(message)
    reset_at = parse_time(metadata.get("quotaResetTimeStamp"), now=now)
    if reset_at is None:
        fallback = wait if wait is not None else parse_duration_s(metadata.get("quotaResetDelay"))
        reset_at = None if fallback is None else now + timedelta(seconds=fallback)
    detail = f"{reason or status}: {message}".strip(": ")

    def exhausted(extra: str = "") -> Failure:
        return Failure(
            "quota_exhausted", window=model, reset_at=reset_at, retry_after_s=wait, detail=extra + detail
        )

    if reason in ACCOUNT_ACTION_REASONS or "IneligibleTier" in message:
        return Failure("auth_failed", detail=detail)
    if status not in QUOTA_STATUSES and not reason:
        return reply.by_status(detail)
    if reason.startswith("MODEL_CAPACITY"):
        return Failure("upstream_error", window=model, retry_after_s=wait, detail=detail)
    if _LIMIT_ZERO.search(message) or any("perday" in q.lower() or "daily" in q.lower() for q in quota_ids):
        return exhausted()
    if reason == "INSUFFICIENT_G1_CREDITS_BALANCE":
        return exhausted("AI credits exhausted; ")
    if reason == "QUOTA_EXHAUSTED":
        return exhausted()
    if reason == "RATE_LIMIT_EXCEEDED" and domain == CLOUD_CODE_DOMAIN and wait is None:
        return exhausted()
    if wait is None and (
        "perminute" in quota_limit.lower() or any("perminute" in q.lower() for q in quota_ids)
    ):
        wait = PER_MINUTE_S
    if wait is not None and wait > LONG_RETRY_S:
        return exhausted()
    return Failure("rate_limited", window=model, retry_after_s=wait, detail=detail)  # a 429, 499 or a reason
