"""Who refreshes a connection's credential, and when a refresh is due (issue 17). Pure: ``now`` is
passed in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Literal, Protocol

from ladder.domain.billing import normalise_auth_type

CredentialOwner = Literal["ladder", "gateway", "static"]
CREDENTIAL_OWNERS: tuple[CredentialOwner, ...] = ("ladder", "gateway", "static")
NEEDS_REAUTH = "needs_reauth"

# Kinds whose refresh tokens are single use: a second redeemer logs the first out. No default owner:
# the operator chooses (the ladder, or the gateway that already refreshes them).
ROTATING_KINDS: frozenset[str] = frozenset({"claude-oauth", "codex-chatgpt", "kiro"})
# Google's refresh tokens do not rotate: concurrent refreshes are harmless, the ladder owns by default.
GOOGLE_KINDS: frozenset[str] = frozenset({"gemini-cli", "antigravity"})
REFRESHABLE_KINDS: frozenset[str] = ROTATING_KINDS | GOOGLE_KINDS


# The credential kind (the adapter's fixture name) of each (provider, auth type) the adapters serve.
# The adapters name their own kind (ladder.providers); this table says the same for the layers that
# may not import them (selectors, the faces). tests/domain/test_credentials.py keeps the two agreeing.
CREDENTIAL_KINDS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("claude", "oauth"): "claude-oauth",
        ("anthropic", "apikey"): "anthropic-api",
        ("codex", "oauth"): "codex-chatgpt",
        ("openai", "apikey"): "openai-api",
        ("copilot", "oauth"): "copilot",
        ("gemini-cli", "oauth"): "gemini-cli",
        ("antigravity", "oauth"): "antigravity",
        ("kiro", "oauth"): "kiro",
        ("cursor", "cookie"): "cursor",
        ("zai", "apikey"): "zai-glm",
        ("kimi-coding", "apikey"): "kimi-coding",
        ("minimax", "apikey"): "minimax-coding",
        ("qwen", "oauth"): "qwen-oauth",
        ("openrouter", "apikey"): "openrouter",
        ("groq", "apikey"): "groq",
        ("cerebras", "apikey"): "cerebras",
        ("mistral", "apikey"): "mistral",
        ("moonshot", "apikey"): "moonshot-api",
    }
)


class KindOwner(Protocol):
    """Whatever names a provider and an auth type: a connection row, the domain's connection."""

    @property
    def provider(self) -> str: ...

    @property
    def auth_type(self) -> str | None: ...


def connection_kind(connection: KindOwner) -> str | None:
    """The connection's credential kind: its provider's and (normalised) auth type's, or without an
    auth type the provider's only kind; None when nothing matches (as the adapters' registry finds)."""
    provider = connection.provider.strip().lower()
    auth = normalise_auth_type(connection.auth_type)
    kinds = [kind for (p, a), kind in CREDENTIAL_KINDS.items() if p == provider and auth in (None, a)]
    return kinds[0] if len(kinds) == 1 else None


def default_owner(kind: str | None) -> CredentialOwner | None:
    """The owner a new credential of this kind gets when the operator says nothing; None: ask."""
    if kind in ROTATING_KINDS:
        return None
    if kind in GOOGLE_KINDS:
        return "ladder"
    return "static"


def effective_lead_s(lead_s: float, *, issued_at: datetime | None, expires_at: datetime) -> float:
    """The lead time, never more than half the token's lifetime: a token that lives five minutes
    with a one-hour lead would otherwise be refreshed on every tick."""
    if issued_at is None:
        return lead_s
    lifetime_s = (expires_at - issued_at).total_seconds()
    return max(0.0, min(lead_s, lifetime_s / 2)) if lifetime_s > 0 else 0.0


def refresh_due(
    *, expires_at: datetime | None, issued_at: datetime | None, lead_s: float, now: datetime
) -> bool:
    """Whether a credential expiring at ``expires_at`` should be refreshed now. No known expiry:
    never before a 401 says so."""
    if expires_at is None:
        return False
    lead = effective_lead_s(lead_s, issued_at=issued_at, expires_at=expires_at)
    return expires_at - timedelta(seconds=lead) <= now


def expires_in_text(expires_at: datetime | None, now: datetime) -> str:
    """ "expires in 3 h 20 min", "expired 5 min ago", "expiry unknown": what the pages show."""
    if expires_at is None:
        return "expiry unknown"
    seconds = (expires_at - now).total_seconds()
    span = _span(abs(seconds))
    return f"expires in {span}" if seconds >= 0 else f"expired {span} ago"


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)} s"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
