"""Kiro: monthly credits of CodeWhisperer ``GetUsageLimits``; any 429 is ambiguous until usage is re-read."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Overage, Reading, Window
from ladder.providers.base import (
    BaseAdapter,
    ConnectionRef,
    Upstream,
    classify_by_status,
    header_retry_after_s,
    throttled,
)
from ladder.providers.timeparse import parse_time
from ladder.providers.values import (
    as_dicts,
    as_float,
    as_str,
    clamp_pct,
    decode_body,
    dig,
    error_fields,
    lower_headers,
)

USAGE_PATH = "/"
WINDOW = "monthly-credits"


def _first_number(entry: Mapping[str, object], *keys: str) -> float | None:
    return next((n for n in (as_float(entry.get(k)) for k in keys) if n is not None), None)


def _overage(body: object) -> Overage | None:
    status = (as_str(dig(body, "overageConfiguration", "overageStatus")) or "").upper()
    if status == "ENABLED":
        return "meters-to-paid"
    if status == "DISABLED":
        return "hard-stop"
    return None


def parse_usage_limits(body: object, now: datetime) -> Reading:
    """``currentUsage`` includes overage: plan used = current − overages, over the plan limit."""
    overage = _overage(body)
    entries = as_dicts(dig(body, "usageBreakdownList"))
    credit = next((e for e in entries if str(e.get("resourceType", "")).upper() == "CREDIT"), None)
    if credit is None:
        return Reading(
            now, (), "poll", verifiable=False, observed_overage=overage, note="no CREDIT usage entry"
        )
    limit = _first_number(credit, "usageLimitWithPrecision", "usageLimit")
    current = _first_number(credit, "currentUsageWithPrecision", "currentUsage")
    overages = _first_number(credit, "currentOveragesWithPrecision", "currentOverages") or 0.0
    if limit is None or limit <= 0 or current is None:
        note = "CREDIT entry without a positive usage limit and a current usage"
        return Reading(now, (), "poll", verifiable=False, observed_overage=overage, note=note)
    plan_used = current - overages
    reset_at = parse_time(credit.get("nextDateReset"), now=now) or parse_time(
        dig(body, "nextDateReset"), now=now
    )
    note = "" if reset_at else "no plausible nextDateReset"
    window = Window(WINDOW, clamp_pct(100.0 * (1.0 - plan_used / limit)), reset_at)
    return Reading(now, (window,), "poll", observed_overage=overage, note=note)


class KiroAdapter(BaseAdapter):
    kind = "kiro"
    provider = "kiro"
    auth_type = "oauth"
    default_base_url = "https://codewhisperer.us-east-1.amazonaws.com"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {
            "Authorization": f"Bearer {connection.credential}",
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "AmazonCodeWhispererService.GetUsageLimits",
            "Accept": "application/json",
        }
        request: dict[str, object] = {"origin": "AI_EDITOR", "resourceType": "AGENTIC_REQUEST"}
        profile_arn = connection.params.get("profile_arn")
        if profile_arn:
            request = {"profileArn": profile_arn, **request}
        return parse_usage_limits(upstream.json("POST", USAGE_PATH, headers=headers, json_body=request), now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        decoded = decode_body(body)
        _, _, message = error_fields(decoded)
        error_type = lower_headers(headers).get("x-amzn-errortype", "").split(":")[0]
        reason = (as_str(dig(decoded, "reason")) or "").upper()
        if error_type == "ServiceQuotaExceededException" or reason.startswith("MONTHLY"):
            return Failure("quota_exhausted", window=WINDOW, detail=message or reason or error_type)
        if status == 429 and "this month" in message.lower():
            # Older Amazon Q: ThrottlingException "Maximum … reached for this month".
            return Failure("quota_exhausted", window=WINDOW, detail=message)
        if status == 429:
            detail = f"{message or 'HTTP 429'} (ambiguous: re-read usage)"
            return throttled(header_retry_after_s(headers, now), detail=detail)
        return classify_by_status(status, headers, now, detail=message or error_type)

    def wants_usage_recheck(self, status: int, failure: Failure) -> bool:
        # A plain 429 has hidden spent credits before (kirodotdev/Kiro#9193).
        return status == 429
