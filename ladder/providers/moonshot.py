"""Moonshot open platform keys (metered): a balance, no quota window."""

from __future__ import annotations

from datetime import datetime

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading, unverifiable
from ladder.providers.values import as_float, dig


class MoonshotApiAdapter(BaseAdapter):
    kind = "moonshot-api"
    provider = "moonshot"
    auth_type = "apikey"
    default_base_url = "https://api.moonshot.ai"
    usage_path = "/v1/users/me/balance"

    def error_in_body(self, body: object) -> bool:
        return as_float(dig(body, "code")) not in (None, 0)

    def read_usage(self, body: object, now: datetime) -> Reading:
        """Verifiable but window-less: the balance is for people; a metered rung does not read quota."""
        balance = as_float(dig(body, "data", "available_balance"))
        if balance is None:
            return unverifiable(now, "no data.available_balance in the balance answer")
        cash = as_float(dig(body, "data", "cash_balance"))
        deficit = " (cash deficit)" if cash is not None and cash < 0 else ""
        return poll_reading(now, notes=[f"balance only, no quota window: available {balance:g}{deficit}"])

    def classify(self, reply: ErrorReply) -> Failure:
        detail = reply.message or reply.error_type
        if (
            reply.error_type == "exceeded_current_quota_error"
            or "insufficient balance" in reply.message.lower()
        ):
            return Failure("quota_exhausted", detail=detail)
        return reply.by_status(detail)
