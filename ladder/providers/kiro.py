"""Kiro: monthly credits of CodeWhisperer ``GetUsageLimits``; any 429 is ambiguous until usage is re-read."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, ErrorReply, poll_reading, throttled
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_dicts, as_float, as_str, clamp_pct, dig, overage_of

WINDOW = "monthly-credits"


def _first_number(entry: Mapping[str, object], *keys: str) -> float | None:
    return next((n for n in (as_float(entry.get(k)) for k in keys) if n is not None), None)


class KiroAdapter(BaseAdapter):
    kind = "kiro"
    provider = "kiro"
    auth_type = "oauth"
    default_base_url = "https://codewhisperer.us-east-1.amazonaws.com"
    usage_path = "/"
    usage_method = "POST"
    usage_headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "AmazonCodeWhispererService.GetUsageLimits",
        "Accept": "application/json",
    }

    def usage_body(self, connection: ConnectionRef) -> object:
        profile_arn = connection.params.get("profile_arn")
        return {
            **({"profileArn": profile_arn} if profile_arn else {}),
            "origin": "AI_EDITOR",
            "resourceType": "AGENTIC_REQUEST",
        }

    def read_usage(self, body: object, now: datetime) -> Reading:
        """``currentUsage`` includes overage: plan used = current − overages, over the plan limit."""
        status = (as_str(dig(body, "overageConfiguration", "overageStatus")) or "").upper()
        overage = overage_of({"ENABLED": True, "DISABLED": False}.get(status))
        entries = as_dicts(dig(body, "usageBreakdownList"))
        credit = next((e for e in entries if str(e.get("resourceType", "")).upper() == "CREDIT"), None)
        if credit is None:
            return poll_reading(now, problems=["no CREDIT usage entry"], overage=overage)
        limit = _first_number(credit, "usageLimitWithPrecision", "usageLimit")
        current = _first_number(credit, "currentUsageWithPrecision", "currentUsage")
        overages = _first_number(credit, "currentOveragesWithPrecision", "currentOverages") or 0.0
        if limit is None or limit <= 0 or current is None:
            problem = "CREDIT entry without a positive usage limit and a current usage"
            return poll_reading(now, problems=[problem], overage=overage)
        reset_at = parse_time(credit.get("nextDateReset"), now=now) or parse_time(
            dig(body, "nextDateReset"), now=now
        )
        notes = [] if reset_at else ["no plausible nextDateReset"]
        window = Window(WINDOW, clamp_pct(100.0 * (1.0 - (current - overages) / limit)), reset_at)
        return poll_reading(now, [window], notes=notes, overage=overage)

    def classify(self, reply: ErrorReply) -> Failure:
        message = reply.message
        error_type = reply.headers.get("x-amzn-errortype", "").split(":")[0]
        reason = (as_str(dig(reply.body, "reason")) or "").upper()
        if error_type == "ServiceQuotaExceededException" or reason.startswith("MONTHLY"):
            return Failure("quota_exhausted", window=WINDOW, detail=message or reason or error_type)
        if reply.status == 429 and "this month" in message.lower():
            # Older Amazon Q: ThrottlingException "Maximum … reached for this month".
            return Failure("quota_exhausted", window=WINDOW, detail=message)
        if reply.status == 429:
            return throttled(reply.wait_s, detail=f"{message or 'HTTP 429'} (ambiguous: re-read usage)")
        return reply.by_status(message or error_type)

    def wants_usage_recheck(self, status: int, failure: Failure) -> bool:
        # A plain 429 has hidden spent credits before (kirodotdev/Kiro#9193).
        return status == 429
