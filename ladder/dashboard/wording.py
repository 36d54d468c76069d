"""The dashboard's words: reasons, rung titles, durations and percentages as an operator reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ladder.domain import Reason, Rung

REASON_WORDS: dict[str, str] = {
    Reason.UNKNOWN_CONNECTION: "the gateway named a connection the ladder does not know",
    Reason.DISABLED: "the connection is disabled",
    Reason.COOLING_DOWN: "the connection is cooling down after a failure",
    Reason.KEYLESS_NOT_PLAN: "keyless connections never count as a plan",
    Reason.UNCURATED_PROVIDER: "no billing catalog row: treated as metered until curated",
    Reason.NOT_PLAN_BILLING: "billing is not a subscription plan",
    Reason.OVERAGE_NOT_HARD_STOP: "may bill past its quota (overage is not hard-stop)",
    Reason.RUNG_DISABLED: "this rung is disabled (budget $0)",
    Reason.BUDGET_EXHAUSTED: "this rung's budget is spent for the period",
    Reason.NO_READING: "no quota reading yet",
    Reason.READING_UNVERIFIABLE: "the quota reading could not be verified",
    Reason.WINDOW_RESET_PASSED: "a window has reset since the reading: it is of a past period",
    Reason.READING_STALE: "the quota reading is too old",
    Reason.QUOTA_EXHAUSTED: "quota exhausted (at or below the exit cutoff)",
    Reason.RESERVE_REACHED: "held back: the connection's reserve is kept for the operator's own use",
    Reason.BELOW_REENTRY_FLOOR: "latched: waiting to climb above the re-entry floor",
}

RUNG_TITLES: dict[Rung, str] = {
    Rung.SUBSCRIPTION: "Subscription plans",
    Rung.KEYLESS: "Keyless",
    Rung.FREE: "Free models",
    Rung.CHEAP: "Cheap models",
    Rung.PREMIUM: "Premium models",
}


def reason_words(code: str, *, reserve_pct: float | None = None) -> str:
    """Plain words for a reason code; a reserve is told with its size."""
    if code == Reason.RESERVE_REACHED and reserve_pct is not None:
        return f"held back: {pct_label(reserve_pct)} % kept for your own use"
    return REASON_WORDS.get(code, code.replace("_", " "))


def duration_words(seconds: float) -> str:
    """A short human duration: 45s, 12m, 3h 05m, 2d 4h."""
    total = int(max(0.0, seconds))
    if total < 60:
        return f"{total}s"
    minutes, _ = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def pct_label(value: float) -> str:
    """12.34 → "12.3", 60.0 → "60"."""
    return f"{round(value, 1):g}"


def until_words(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "no reset time given"
    delta = (moment - now).total_seconds()
    if delta <= 0:
        return f"passed {duration_words(-delta)} ago"
    return f"in {duration_words(delta)}"


def forecast_words(exhausts_at: datetime | None, reset_at: datetime | None, now: datetime) -> str:
    """ "runs out at 14:20 UTC, 40m before its reset"; "" without a forecast (ladder.domain.forecast
    gives none at the cutoff, when burning nothing or when the window lasts past its reset)."""
    if exhausts_at is None:
        return ""
    moment = exhausts_at.astimezone(UTC)
    when = f"{moment:%H:%M} UTC" if moment - now < timedelta(hours=20) else f"{moment:%Y-%m-%d %H:%M} UTC"
    if reset_at is None:
        return f"runs out at {when}"
    return f"runs out at {when}, {duration_words((reset_at - exhausts_at).total_seconds())} before its reset"


def rung_words(rung: int | None) -> str:
    return "empty pool" if rung is None else f"{rung} {Rung(rung).label}"
