"""Cursor: the included plan budget of ``/api/usage-summary``, authenticated by the web session cookie."""

from __future__ import annotations

from datetime import datetime

from ladder.domain.types import Failure, Overage, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, ErrorReply, poll_reading
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_bool, as_dict, as_float, clamp_pct, dig, overage_of, share_pct

WINDOW = "monthly-plan"
COOKIE_NAME = "WorkosCursorSessionToken"


def _plan_used_pct(plan: dict[str, object]) -> float | None:
    """CodexBar's precedence: ``totalPercentUsed``, the mean of the two pools, then used/limit (cents).

    The percent fields are percent units even below 1 (0.36 means 0.36 %).
    """
    total = as_float(plan.get("totalPercentUsed"))
    if total is not None:
        return total
    pools = [
        p
        for p in (as_float(plan.get("autoPercentUsed")), as_float(plan.get("apiPercentUsed")))
        if p is not None
    ]
    if pools:
        return sum(pools) / len(pools)
    return share_pct(as_float(plan.get("used")), as_float(plan.get("limit")))


def _on_demand_overage(on_demand: object) -> Overage | None:
    """Extra usage is on when on-demand spend is enabled and its limit (if any) is not zero."""
    enabled, limit = as_bool(dig(on_demand, "enabled")), as_float(dig(on_demand, "limit"))
    return overage_of(None if enabled is None else enabled and (limit is None or limit > 0))


class CursorAdapter(BaseAdapter):
    kind = "cursor"
    provider = "cursor"
    auth_type = "cookie"
    default_base_url = "https://cursor.com"
    usage_path = "/api/usage-summary"

    def auth_headers(self, connection: ConnectionRef) -> dict[str, str]:
        # The credential is the cookie value ("<userId>%3A%3A<jwt>") or the whole "name=value" pair.
        cookie = connection.credential.strip()
        return {"Cookie": cookie if cookie.startswith(f"{COOKIE_NAME}=") else f"{COOKIE_NAME}={cookie}"}

    def read_usage(self, body: object, now: datetime) -> Reading:
        usage = as_dict(dig(body, "individualUsage")) or {}
        # Enterprise and team seats report ``overall`` instead of ``plan``.
        plan = as_dict(usage.get("plan")) or as_dict(usage.get("overall"))
        overage = _on_demand_overage(usage.get("onDemand"))
        used = None if plan is None else _plan_used_pct(plan)
        if used is None:
            problem = "no individualUsage.plan percentage or used/limit in the usage summary"
            return poll_reading(now, problems=[problem], overage=overage)
        window = Window(WINDOW, clamp_pct(100.0 - used), parse_time(dig(body, "billingCycleEnd"), now=now))
        return poll_reading(now, [window], overage=overage)

    def classify(self, reply: ErrorReply) -> Failure:
        if 300 <= reply.status < 400:
            # An expired session is redirected to the authenticator.
            return Failure("auth_failed", detail=f"HTTP {reply.status} redirect: session expired")
        return reply.by_status(reply.message)
