"""Where the ladder reaches the providers: a connection's own ``base_url`` wins; else, when
``settings.LADDER_UPSTREAM_BASE_URL`` is set (the local fake upstream in tests and the demo), the
adapter is given ``f"{LADDER_UPSTREAM_BASE_URL without trailing /}/{adapter.kind}"`` (the fake
upstream's per-kind namespace, e.g. ``http://127.0.0.1:8555/claude-oauth``); else the adapter's
default upstream. The usage polls and the token endpoints follow the same rule; the providers receive
the override as an argument and never read settings."""

from __future__ import annotations

import httpx
from django.conf import settings

from ladder.providers import DEFAULT_TIMEOUT


def upstream_override(kind: str) -> str | None:
    """``f"{settings.LADDER_UPSTREAM_BASE_URL}/{kind}"`` when that setting is set, else None."""
    base = str(settings.LADDER_UPSTREAM_BASE_URL or "").strip().rstrip("/")
    return f"{base}/{kind}" if base else None


def upstream_client() -> httpx.Client:
    """A client for the providers' endpoints: their timeout, no redirect followed."""
    return httpx.Client(timeout=DEFAULT_TIMEOUT, follow_redirects=False)
