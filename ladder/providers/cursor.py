"""Cursor: the included plan budget of ``/api/usage-summary``, authenticated by the web session cookie."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Overage, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, Upstream, classify_by_status
from ladder.providers.timeparse import parse_time
from ladder.providers.values import as_bool, as_dict, as_float, clamp_pct, decode_body, dig, error_fields

USAGE_PATH = "/api/usage-summary"
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
    used, limit = as_float(plan.get("used")), as_float(plan.get("limit"))
    if used is not None and limit is not None and limit > 0:
        return 100.0 * used / limit
    return None


def _on_demand_overage(on_demand: object) -> Overage | None:
    enabled = as_bool(dig(on_demand, "enabled"))
    if enabled is None:
        return None
    limit = as_float(dig(on_demand, "limit"))
    return "meters-to-paid" if enabled and (limit is None or limit > 0) else "hard-stop"


def parse_usage_summary(body: object, now: datetime) -> Reading:
    usage = as_dict(dig(body, "individualUsage")) or {}
    # Enterprise and team seats report ``overall`` instead of ``plan``.
    plan = as_dict(usage.get("plan")) or as_dict(usage.get("overall"))
    overage = _on_demand_overage(usage.get("onDemand"))
    used = None if plan is None else _plan_used_pct(plan)
    if used is None:
        note = "no individualUsage.plan percentage or used/limit in the usage summary"
        return Reading(now, (), "poll", verifiable=False, observed_overage=overage, note=note)
    window = Window(WINDOW, clamp_pct(100.0 - used), parse_time(dig(body, "billingCycleEnd"), now=now))
    return Reading(now, (window,), "poll", observed_overage=overage)


class CursorAdapter(BaseAdapter):
    kind = "cursor"
    provider = "cursor"
    auth_type = "cookie"
    default_base_url = "https://cursor.com"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        # The credential is the cookie value ("<userId>%3A%3A<jwt>") or the whole "name=value" pair.
        cookie = connection.credential.strip()
        if not cookie.startswith(f"{COOKIE_NAME}="):
            cookie = f"{COOKIE_NAME}={cookie}"
        headers = {"Cookie": cookie, "Accept": "application/json"}
        return parse_usage_summary(upstream.json("GET", USAGE_PATH, headers=headers), now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        _, _, message = error_fields(decode_body(body))
        if 300 <= status < 400:
            # An expired session is redirected to the authenticator.
            return Failure("auth_failed", detail=f"HTTP {status} redirect: session expired")
        return classify_by_status(status, headers, now, detail=message)
