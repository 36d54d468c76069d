"""GitHub Copilot seat: premium interactions of ``copilot_internal/user``, a calendar-month window."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ladder.domain.types import Failure, Overage, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, Upstream, classify_by_status
from ladder.providers.timeparse import next_utc_boundary, parse_time
from ladder.providers.values import as_bool, as_dict, as_float, clamp_pct, decode_body, dig, error_fields

USAGE_PATH = "/copilot_internal/user"
WINDOW = "monthly-premium"
EDITOR_HEADERS = {
    "Accept": "application/json",
    "Editor-Version": "vscode/1.96.2",
    "Editor-Plugin-Version": "copilot-chat/0.26.7",
    "User-Agent": "GitHubCopilotChat/0.26.7",
    "X-Github-Api-Version": "2025-04-01",
}


def _reset_at(body: object, now: datetime) -> datetime | None:
    """The UTC reset field, else the date-only one (UTC midnight), else the next 1st of the month."""
    for key in ("quota_reset_date_utc", "quota_reset_date", "limited_user_reset_date"):
        reset_at = parse_time(dig(body, key), now=now)
        if reset_at is not None:
            return reset_at
    return next_utc_boundary("monthly", now=now)


def _premium_pct(snapshot: dict[str, object]) -> float | str:
    """Remaining % (negative percentages clamp to 0), or why there is none."""
    entitlement = as_float(snapshot.get("entitlement"))
    remaining = as_float(snapshot.get("remaining"))
    if entitlement == 0 and remaining == 0:
        return "placeholder premium snapshot (entitlement 0, remaining 0) carries no percentage"
    percent = as_float(snapshot.get("percent_remaining"))
    if percent is not None:
        return clamp_pct(percent)
    if remaining is not None and entitlement is not None and entitlement > 0:
        return clamp_pct(100.0 * remaining / entitlement)
    return "premium snapshot without percent_remaining or remaining/entitlement"


def _overage(snapshot: dict[str, object]) -> Overage | None:
    permitted = as_bool(snapshot.get("overage_permitted"))
    if permitted is None:
        return None
    return "meters-to-paid" if permitted else "hard-stop"


def parse_user(body: object, now: datetime) -> Reading:
    snapshots = as_dict(dig(body, "quota_snapshots"))
    if snapshots is None:
        return _parse_free_plan(body, now)
    premium = as_dict(snapshots.get("premium_interactions"))
    if premium is None:
        return Reading(now, (), "poll", verifiable=False, note="no premium_interactions quota snapshot")
    overage = _overage(premium)
    if as_bool(premium.get("unlimited")):
        return Reading(now, (), "poll", observed_overage=overage, note="premium interactions are unlimited")
    pct = _premium_pct(premium)
    if isinstance(pct, str):
        return Reading(now, (), "poll", verifiable=False, observed_overage=overage, note=pct)
    return Reading(now, (Window(WINDOW, pct, _reset_at(body, now)),), "poll", observed_overage=overage)


def _parse_free_plan(body: object, now: datetime) -> Reading:
    """Copilot Free: remaining counts in ``limited_user_quotas`` over totals in ``monthly_quotas``."""
    remaining = as_float(dig(body, "limited_user_quotas", "chat"))
    total = as_float(dig(body, "monthly_quotas", "chat"))
    if remaining is None or total is None or total <= 0:
        return Reading(
            now, (), "poll", verifiable=False, note="no quota_snapshots and no free-plan chat quota"
        )
    window = Window("monthly-chat", clamp_pct(100.0 * remaining / total), _reset_at(body, now))
    return Reading(now, (window,), "poll")


class CopilotAdapter(BaseAdapter):
    kind = "copilot"
    provider = "copilot"
    auth_type = "oauth"
    default_base_url = "https://api.github.com"
    supports_poll = True

    def poll(self, upstream: Upstream, connection: ConnectionRef, now: datetime) -> Reading:
        # The GitHub OAuth token, not the short-lived seat token.
        headers = {"Authorization": f"token {connection.credential}", **EDITOR_HEADERS}
        return parse_user(upstream.json("GET", USAGE_PATH, headers=headers), now)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: object, now: datetime
    ) -> Failure:
        decoded = decode_body(body)
        _, code, message = error_fields(decoded)
        if status == 402 or code == "quota_exceeded":
            return Failure("quota_exhausted", window=WINDOW, detail=message or code)
        if 200 <= status < 300:
            # A quota snapshot handed in as a failure: spent when premium interactions are at 0 %.
            reading = parse_user(decoded, now)
            spent = next((w for w in reading.windows if w.remaining_pct <= 0), None)
            if reading.verifiable and spent is not None:
                return Failure(
                    "quota_exhausted", window=spent.name, reset_at=spent.reset_at, detail="premium at 0 %"
                )
        return classify_by_status(status, headers, now, detail=message or code)
