"""GitHub Copilot seat: premium interactions of ``copilot_internal/user``, a calendar-month window."""

from __future__ import annotations

from datetime import datetime

from ladder.domain.types import Failure, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, ErrorReply, poll_reading
from ladder.providers.timeparse import next_utc_boundary, parse_time
from ladder.providers.values import as_bool, as_dict, as_float, clamp_pct, dig, overage_of, share_pct

WINDOW = "monthly-premium"


def _reset_at(body: object, now: datetime) -> datetime | None:
    """The UTC reset field, else the date-only one (UTC midnight), else the next 1st of the month."""
    keys = ("quota_reset_date_utc", "quota_reset_date", "limited_user_reset_date")
    found = next((reset_at for key in keys if (reset_at := parse_time(dig(body, key), now=now))), None)
    return found or next_utc_boundary("monthly", now=now)


def _premium_pct(snapshot: dict[str, object]) -> float | str:
    """Remaining % (negative percentages clamp to 0), or why there is none."""
    entitlement = as_float(snapshot.get("entitlement"))
    remaining = as_float(snapshot.get("remaining"))
    if entitlement == 0 and remaining == 0:
        return "placeholder premium snapshot (entitlement 0, remaining 0) carries no percentage"
    percent = as_float(snapshot.get("percent_remaining"))
    if percent is not None:
        return clamp_pct(percent)
    counted = share_pct(remaining, entitlement)
    return (
        "premium snapshot without percent_remaining or remaining/entitlement" if counted is None else counted
    )


def _chat_window(body: object, snapshots: dict[str, object], now: datetime) -> Window | None:
    """``monthly-chat``: a limited chat snapshot first, else the chat count of ``limited_user_quotas``
    over that of ``monthly_quotas`` (an unlimited chat snapshot does not hide those counts)."""
    for key in ("chat", "chat_messages"):
        snapshot = as_dict(snapshots.get(key))
        if snapshot is not None and not as_bool(snapshot.get("unlimited")):
            pct = _premium_pct(snapshot)
            if not isinstance(pct, str):
                return Window("monthly-chat", pct, _reset_at(body, now))
    # Completions (code completion) never carry routed chat, so only the chat quota gates.
    remaining = as_float(dig(body, "limited_user_quotas", "chat"))
    counted = share_pct(remaining, as_float(dig(body, "monthly_quotas", "chat")))
    return None if counted is None else Window("monthly-chat", counted, _reset_at(body, now))


class CopilotAdapter(BaseAdapter):
    kind = "copilot"
    provider = "copilot"
    auth_type = "oauth"
    default_base_url = "https://api.github.com"
    usage_path = "/copilot_internal/user"
    usage_headers = {
        "Accept": "application/json",
        "Editor-Version": "vscode/1.96.2",
        "Editor-Plugin-Version": "copilot-chat/0.26.7",
        "User-Agent": "GitHubCopilotChat/0.26.7",
        "X-Github-Api-Version": "2025-04-01",
    }

    def auth_headers(self, connection: ConnectionRef) -> dict[str, str]:
        # The GitHub OAuth token, not the short-lived seat token.
        return {"Authorization": f"token {connection.credential}"}

    def read_usage(self, body: object, now: datetime) -> Reading:
        """Premium interactions when their snapshot is limited and readable; otherwise (missing,
        unlimited or a placeholder) the limited chat quota, as CodexBar falls back. Unlimited only when
        premium interactions are unlimited and no limited chat quota is left to read."""
        snapshots = as_dict(dig(body, "quota_snapshots")) or {}
        premium = as_dict(snapshots.get("premium_interactions"))
        overage = overage_of(as_bool(premium.get("overage_permitted"))) if premium is not None else None
        problem = (
            "no quota_snapshots and no free-plan quota"
            if not snapshots
            else "no premium_interactions quota snapshot"
        )
        if premium is not None and not as_bool(premium.get("unlimited")):
            pct = _premium_pct(premium)
            if not isinstance(pct, str):
                return poll_reading(now, [Window(WINDOW, pct, _reset_at(body, now))], overage=overage)
            problem = pct
        chat = _chat_window(body, snapshots, now)
        if chat is not None:
            return poll_reading(now, [chat], overage=overage)
        if premium is not None and as_bool(premium.get("unlimited")):
            return poll_reading(now, notes=["premium interactions are unlimited"], overage=overage)
        return poll_reading(now, problems=[problem], overage=overage)

    def classify(self, reply: ErrorReply) -> Failure:
        if reply.status == 402 or reply.code == "quota_exceeded":
            return Failure("quota_exhausted", window=WINDOW, detail=reply.message or reply.code)
        if 200 <= reply.status < 300:
            # A quota snapshot handed in as a failure: spent when premium interactions are at 0 %.
            reading = self.read_usage(reply.body, reply.now)
            spent = next((w for w in reading.windows if w.remaining_pct <= 0), None)
            if reading.verifiable and spent is not None:
                return Failure(
                    "quota_exhausted", window=spent.name, reset_at=spent.reset_at, detail="premium at 0 %"
                )
        return reply.by_status(reply.message or reply.code)
