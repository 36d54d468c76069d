"""OpenAI Codex on a ChatGPT plan: the ``wham/usage`` endpoint and the passive ``x-codex-*`` headers.

Windows are identified by their length (``limit_window_seconds``), never by their position: a team
workspace answers with a weekly ``primary_window`` and no secondary one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from ladder.domain.types import Failure, Overage, Reading, Window
from ladder.providers.base import BaseAdapter, ConnectionRef, ErrorReply, poll_reading
from ladder.providers.timeparse import parse_time
from ladder.providers.values import (
    as_bool,
    as_dict,
    as_dicts,
    as_float,
    as_str,
    clamp_pct,
    dig,
    lower_headers,
    window_name_for_seconds,
)

_SLUG = re.compile(r"[^a-z0-9.]+")


def _window(entry: object, now: datetime, *, suffix: str = "", scope: tuple[str, ...] = ()) -> Window | str:
    """A window, or why it cannot be read."""
    used = as_float(dig(entry, "used_percent"))
    length_s = as_float(dig(entry, "limit_window_seconds"))
    if used is None or length_s is None or length_s <= 0:
        return "a window without numeric used_percent and limit_window_seconds"
    reset_at = parse_time(dig(entry, "reset_at"), now=now) or parse_time(
        dig(entry, "reset_after_seconds"), now=now, relative=True
    )
    return Window(window_name_for_seconds(length_s) + suffix, clamp_pct(100.0 - used), reset_at, scope)


def _windows_of(
    rate_limit: object, now: datetime, *, suffix: str = "", scope: tuple[str, ...] = ()
) -> tuple[list[Window], list[str]]:
    windows: list[Window] = []
    problems: list[str] = []
    for key in ("primary_window", "secondary_window"):
        entry = dig(rate_limit, key)
        if entry is None:
            continue
        parsed = _window(entry, now, suffix=suffix, scope=scope)
        if isinstance(parsed, Window):
            windows.append(parsed)
        else:
            problems.append(f"{key}{suffix}: {parsed}")
    return windows, problems


def credits_overage(
    has_credits: bool | None, balance: float | None, unlimited: bool | None, limit_reached: bool | None = None
) -> Overage | None:
    """Purchased credits keep serving past the plan: paid spill when there is a positive balance."""
    if has_credits is None and unlimited is None:
        return None
    if limit_reached:
        return "hard-stop"
    if unlimited or (has_credits and (balance is None or balance > 0)):
        return "meters-to-paid"
    return "hard-stop"


def _header_windows(headers: Mapping[str, str], now: datetime) -> list[Window]:
    windows: list[Window] = []
    for slot in ("primary", "secondary"):
        used = as_float(headers.get(f"x-codex-{slot}-used-percent"))
        minutes = as_float(headers.get(f"x-codex-{slot}-window-minutes"))
        if used is None or minutes is None or minutes <= 0:
            continue
        reset_at = parse_time(headers.get(f"x-codex-{slot}-reset-at"), now=now) or parse_time(
            headers.get(f"x-codex-{slot}-reset-after-seconds"), now=now, relative=True
        )
        windows.append(Window(window_name_for_seconds(minutes * 60), clamp_pct(100.0 - used), reset_at))
    return windows


class CodexAdapter(BaseAdapter):
    kind = "codex-chatgpt"
    provider = "codex"
    auth_type = "oauth"
    default_base_url = "https://chatgpt.com"
    usage_path = "/backend-api/wham/usage"
    usage_headers = {"Accept": "application/json", "User-Agent": "codex-cli"}

    def auth_headers(self, connection: ConnectionRef) -> dict[str, str]:
        headers = super().auth_headers(connection)
        if account_id := connection.params.get("account_id"):
            headers["ChatGPT-Account-Id"] = account_id
        return headers

    def read_usage(self, body: object, now: datetime) -> Reading:
        rate_limit = as_dict(dig(body, "rate_limit"))
        if rate_limit is None:
            return poll_reading(now, problems=["no rate_limit object in the usage answer"])
        windows, problems = _windows_of(rate_limit, now)
        notes: list[str] = []
        for extra in as_dicts(dig(body, "additional_rate_limits")):
            label = as_str(extra.get("limit_name")) or as_str(extra.get("metered_feature"))
            if label is None:
                notes.append("an additional rate limit without a name was ignored")
                continue
            slug = _SLUG.sub("-", label.lower()).strip("-")
            extra_windows, extra_problems = _windows_of(
                extra.get("rate_limit"), now, suffix=f"-{slug}", scope=(f"*{slug}*",)
            )
            windows.extend(extra_windows)
            notes.extend(extra_problems)
        credits = dig(body, "credits")
        overage = credits_overage(
            has_credits=as_bool(dig(credits, "has_credits")),
            balance=as_float(dig(credits, "balance")),
            unlimited=as_bool(dig(credits, "unlimited")),
            limit_reached=as_bool(dig(credits, "overage_limit_reached")),
        )
        main = [w for w in windows if not w.scope_models]
        if not problems and not main:
            problems = ["no primary or secondary window in the usage answer"]
        blocked = as_bool(rate_limit.get("limit_reached")) or as_bool(rate_limit.get("allowed")) is False
        if not problems and blocked and all(w.remaining_pct > 0 for w in main):
            problems = ["rate_limit says the limit is reached but no window is at 100 %"]
        return poll_reading(now, windows, problems=problems, notes=[] if problems else notes, overage=overage)

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        lowered = lower_headers(headers)
        windows = _header_windows(lowered, now)
        overage = credits_overage(
            has_credits=as_bool(lowered.get("x-codex-credits-has-credits")),
            balance=as_float(lowered.get("x-codex-credits-balance")),
            unlimited=as_bool(lowered.get("x-codex-credits-unlimited")),
        )
        if not windows:
            return None
        return Reading(now, tuple(windows), "headers", observed_overage=overage)

    def classify(self, reply: ErrorReply) -> Failure:
        now, detail = reply.now, reply.message or reply.error_type
        if reply.error_type != "usage_limit_reached":
            return reply.by_status(detail)
        spent = [w for w in _header_windows(reply.headers, now) if w.remaining_pct <= 0]
        error = as_dict(dig(reply.body, "error")) or as_dict(reply.body) or {}
        resets_in = as_float(error.get("resets_in_seconds"))
        reset_at = parse_time(error.get("resets_at"), now=now)
        if reset_at is not None and reset_at <= now:
            reset_at = None  # already past: stale, the relative value is the live one
        if reset_at is None and resets_in is not None:
            reset_at = now + timedelta(seconds=resets_in)
        if reset_at is None and spent:
            reset_at = spent[0].reset_at
        wait = reply.wait_s
        if wait is None and reset_at is not None:
            wait = max(0.0, (reset_at - now).total_seconds())
        window = spent[0].name if spent else None
        return Failure("quota_exhausted", window=window, reset_at=reset_at, retry_after_s=wait, detail=detail)
