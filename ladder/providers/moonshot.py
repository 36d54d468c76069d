"""Moonshot open platform keys (metered): a balance, no quota window."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Reading
from ladder.providers.base import BaseAdapter, ConnectionRef, FetchError, Upstream, classify_by_status
from ladder.providers.values import as_float, decode_body, dig, error_fields

BALANCE_PATH = "/v1/users/me/balance"


def parse_balance(body: object, now: datetime) -> Reading:
    """Verifiable but window-less: the balance is for people; a metered rung does not read quota."""
    balance = as_float(dig(body, "data", "available_balance"))
    if balance is None:
        return Reading(
            now, (), "poll", verifiable=False, note="no data.available_balance in the balance answer"
        )
    cash = as_float(dig(body, "data", "cash_balance"))
    deficit = " (cash deficit)" if cash is not None and cash < 0 else ""
    return Reading(now, (), "poll", note=f"balance only, no quota window: available {balance:g}{deficit}")


class MoonshotApiAdapter(BaseAdapter):
    kind = "moonshot-api"
    provider = "moonshot"
    auth_type = "apikey"
    default_base_url = "https://api.moonshot.ai"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        headers = {"Authorization": f"Bearer {connection.credential}", "Accept": "application/json"}
        body = upstream.json("GET", BALANCE_PATH, headers=headers)
        code = as_float(dig(body, "code"))
        if code is not None and code != 0:
            raise FetchError(self.classify_failure(200, {}, body, now), status=200)
        return parse_balance(body, now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        error_type, _, message = error_fields(decode_body(body))
        if error_type == "exceeded_current_quota_error" or "insufficient balance" in message.lower():
            return Failure("quota_exhausted", detail=message or error_type)
        return classify_by_status(status, headers, now, detail=message or error_type)
