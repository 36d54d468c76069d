"""Claude Code OAuth (Pro/Max): the OAuth usage endpoint and the unified rate-limit headers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from ladder.domain.types import Failure, Overage, Reading, SpentWindow, Window
from ladder.providers.base import BaseAdapter, ErrorReply, poll_reading, unverifiable
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
    overage_of,
)

# Families named by the flat ``seven_day_<x>`` keys and the header claims, where other suffixes are
# not models (``seven_day_oauth_apps``, ``seven_day_routines``). A ``weekly_scoped`` limit names its
# model outright, so any family it names counts there (``Fable``): see ``_family_of_model``.
MODEL_FAMILIES = ("opus", "sonnet", "haiku")
_NOT_A_FAMILY = frozenset({"claude", "model", "models", "all", "only"})
UNIFIED = "anthropic-ratelimit-unified-"
_CLAIM_HEADER = re.compile(rf"^{UNIFIED}(?P<claim>.+)-(?P<field>utilization|reset|status)$")


def _scoped_window(family: str, remaining_pct: float, reset_at: datetime | None) -> Window:
    return Window(f"7d-{family}", remaining_pct, reset_at, scope_models=(f"*{family}*",))


def _family_of(text: str) -> str | None:
    lowered = text.lower()
    return next((family for family in MODEL_FAMILIES if family in lowered), None)


def _family_of_model(label: str) -> str | None:
    """The family of a model a limit names: a known family if it says one, else the first word that
    is neither "claude" nor a version (``claude-fable-5`` and ``Fable`` → ``fable``)."""
    words = (word for word in re.findall(r"[a-z]+", label.lower()) if word not in _NOT_A_FAMILY)
    return _family_of(label) or next(words, None)


@dataclass(frozen=True)
class Claim:
    """One ``anthropic-ratelimit-unified-<claim>-*`` group (``5h``, ``7d``, ``7d_sonnet``…)."""

    claim: str
    status: str | None
    utilization: float | None
    reset_at: datetime | None

    @property
    def window_name(self) -> str:
        return self.claim.replace("_", "-")

    @property
    def rejected(self) -> bool:
        return self.status == "rejected"

    def window(self) -> Window | None:
        """Rejected means spent whatever the utilization says; a scope we cannot name is skipped."""
        if self.rejected:
            remaining = 0.0
        elif self.utilization is not None:
            remaining = clamp_pct(100.0 * (1.0 - self.utilization))
        else:
            return None
        base, _, suffix = self.claim.partition("_")
        if not suffix:
            return Window(base, remaining, self.reset_at)
        family = _family_of(suffix)
        if family is None:
            return None
        return _scoped_window(family, remaining, self.reset_at)


def unified_claims(headers: Mapping[str, str], now: datetime) -> list[Claim]:
    lowered = lower_headers(headers)
    names = sorted({m["claim"] for h in lowered if (m := _CLAIM_HEADER.match(h)) and m["claim"] != "overage"})
    return [
        Claim(
            claim=name,
            status=lowered.get(f"{UNIFIED}{name}-status", "").strip().lower() or None,
            utilization=as_float(lowered.get(f"{UNIFIED}{name}-utilization")),
            reset_at=parse_time(lowered.get(f"{UNIFIED}{name}-reset"), now=now),
        )
        for name in names
    ]


def unified_overage(headers: Mapping[str, str]) -> Overage | None:
    """In use, or allowed, = extra usage switched on; rejected = off; absent = cannot tell."""
    lowered = lower_headers(headers)
    if as_bool(lowered.get(f"{UNIFIED}overage-in-use")):
        return "meters-to-paid"
    status = lowered.get(f"{UNIFIED}overage-status", "").strip().lower()
    if status in ("allowed", "allowed_warning"):
        return "meters-to-paid"
    if status == "rejected":
        return "hard-stop"
    return None


class ClaudeOAuthAdapter(BaseAdapter):
    kind = "claude-oauth"
    provider = "claude"
    auth_type = "oauth"
    default_base_url = "https://api.anthropic.com"
    usage_path = "/api/oauth/usage"
    usage_headers = {
        "anthropic-beta": "oauth-2025-04-20",
        "Accept": "application/json",
        "User-Agent": "claude-code/2.1.0",
    }

    def read_usage(self, body: object, now: datetime) -> Reading:
        """``utilization``/``percent`` are percent *used*; ``limits[]`` fills what the flat keys leave
        null."""
        if as_dict(body) is None:
            return unverifiable(now, "usage answer is not a JSON object")
        windows: dict[str, Window] = {}
        problems: list[str] = []

        def add(name: str, entry: object, used_key: str, family: str | None = None) -> None:
            used = as_float(dig(entry, used_key))
            if used is None:
                problems.append(f"{name}: no numeric {used_key!r}")
                return
            reset_at = parse_time(dig(entry, "resets_at"), now=now)
            scope = (f"*{family}*",) if family else ()
            windows[name] = Window(name, clamp_pct(100.0 - used), reset_at, scope)

        for key, name in (("five_hour", "5h"), ("seven_day", "7d")):
            if as_dict(dig(body, key)) is not None:
                add(name, dig(body, key), "utilization")
        for family in MODEL_FAMILIES:
            entry = dig(body, f"seven_day_{family}")
            if as_dict(entry) is not None:
                add(f"7d-{family}", entry, "utilization", family)

        for limit in as_dicts(dig(body, "limits")):
            kind = as_str(limit.get("kind"))
            if kind == "session" and "5h" not in windows:
                add("5h", limit, "percent")
            elif kind == "weekly_all" and "7d" not in windows:
                add("7d", limit, "percent")
            elif kind == "weekly_scoped":
                model = as_dict(dig(limit, "scope", "model")) or {}
                label = " ".join(
                    str(v) for v in (model.get("id"), model.get("display_name")) if isinstance(v, str)
                )
                scoped = _family_of_model(label)
                if scoped is None:
                    problems.append(f"weekly_scoped limit for an unknown model {label!r} ignored")
                elif f"7d-{scoped}" not in windows:
                    add(f"7d-{scoped}", limit, "percent", scoped)

        missing = [name for name in ("5h", "7d") if name not in windows]
        overage = overage_of(as_bool(dig(body, "extra_usage", "is_enabled")))
        if missing:
            said = f" ({'; '.join(problems)})" if problems else ""
            problems = [f"no {' or '.join(missing)} window in the usage answer{said}"]
            return poll_reading(now, windows.values(), problems=problems, overage=overage)
        return poll_reading(now, windows.values(), notes=problems, overage=overage)

    def read_headers(self, headers: Mapping[str, str], now: datetime) -> Reading | None:
        claims = unified_claims(headers, now)
        if not claims:
            return None
        windows = tuple(w for claim in claims if (w := claim.window()) is not None)
        overage = unified_overage(headers)
        if not windows:
            return unverifiable(now, "unified headers without a usable utilization", source="headers")
        return Reading(now, windows, "headers", observed_overage=overage)

    def classify(self, reply: ErrorReply) -> Failure:
        rejected = [claim for claim in unified_claims(reply.headers, reply.now) if claim.rejected]
        if rejected and (reply.status == 429 or unified_overage(reply.headers) == "meters-to-paid"):
            # A 200 with a rejected window and overage in use is billed as extra usage: the plan is spent.
            # Every rejected window is spent; the one resetting last binds and is named first, with its
            # reset, else the unified one; ``windows`` lists them all when there are several.
            rejected.sort(key=lambda c: (c.reset_at is None, -(c.reset_at or reply.now).timestamp()))
            binding = rejected[0].reset_at or parse_time(reply.headers.get(f"{UNIFIED}reset"), now=reply.now)
            spent = [SpentWindow(claim.window_name, claim.reset_at) for claim in rejected[1:]]
            spill = " (served as paid extra usage)" if reply.status < 400 else ""
            names = ", ".join(claim.claim for claim in rejected)
            return Failure(
                "quota_exhausted",
                window=rejected[0].window_name,
                reset_at=binding,
                retry_after_s=reply.wait_s,
                detail=f"unified window{'s' if spent else ''} {names} rejected{spill}",
                windows=(SpentWindow(rejected[0].window_name, binding), *spent) if spent else (),
            )
        return reply.by_status(reply.message or reply.error_type)
