"""Connections for the refresh tests, and a claim on one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from devtools.fakeupstream import FakeUpstream
from ladder.models import Connection
from ladder.providers import ADAPTERS
from ladder.services.refresh.claim import claim_deadline, connections_claim
from ladder.services.refresh.fanout import connections_refresh_many

LEASE_S = 60.0
# Every kind whose adapter polls a quota endpoint that the fake upstream serves.
KINDS = (
    "claude-oauth",
    "codex-chatgpt",
    "copilot",
    "gemini-cli",
    "antigravity",
    "kiro",
    "cursor",
    "zai-glm",
    "kimi-coding",
    "minimax-coding",
    "openrouter",
    "moonshot-api",
)


def make_connection(
    upstream: FakeUpstream | None, cid: str, kind: str = "claude-oauth", **fields: Any
) -> Connection:
    adapter = ADAPTERS[kind]
    provider = fields.pop("provider", adapter.provider)
    auth_type = fields.pop("auth_type", adapter.auth_type)
    connection = Connection(
        id=cid,
        provider=provider,
        auth_type=auth_type,
        base_url=upstream.url_for(kind, cid) if upstream is not None else None,
        **fields,
    )
    connection.set_credential(f"token-{cid}")
    connection.save()
    return connection


def claim(cid: str) -> datetime:
    now = timezone.now()
    assert connections_claim(connection_ids=[cid], now=now, lease_s=LEASE_S) == [cid]
    return claim_deadline(now, LEASE_S)


def refresh(cid: str, claim_until: datetime) -> str:
    """Poll one claimed connection as the fan-out does: its outcome (``claim_lost``: not ours)."""
    outcomes = connections_refresh_many([cid], claim_until=claim_until).outcomes
    return next(iter(outcomes), "claim_lost")
