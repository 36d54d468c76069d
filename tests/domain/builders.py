"""Small builders for domain tests: one fixed clock and a catalog shaped like the acceptance vectors'."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ladder.domain import (
    Candidate,
    CatalogEntry,
    Connection,
    LadderConfig,
    ModelEntry,
    Reading,
    Resolution,
    Snapshot,
    Window,
    resolve,
)
from ladder.domain.types import Overage

NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def at(text: str) -> datetime:
    """An aware datetime from ISO text ("Z" or an offset)."""
    return datetime.fromisoformat(text)


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def earlier(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry("planned", "oauth", "subscription", "hard-stop"),
    CatalogEntry("planned", "apikey", "metered", "meters-to-paid"),
    CatalogEntry("plan-wide", None, "subscription", "hard-stop"),
    CatalogEntry("overflowing", None, "subscription", "meters-to-paid"),
    CatalogEntry("metered-co", None, "metered", "meters-to-paid"),
    CatalogEntry("mystery-co", None, "unknown", "unknown"),
    CatalogEntry("claude", "oauth", "subscription", "hard-stop"),
    CatalogEntry("claude", "apikey", "metered", "meters-to-paid"),
)

MODELS: tuple[ModelEntry, ...] = (
    ModelEntry("planned", "m1", 3.0, categories=("coding",)),
    ModelEntry("planned", "plan-model", 3.0, categories=("coding",)),
    ModelEntry("metered-co", "cheap-model", 0.5, categories=("chat",)),
    ModelEntry("metered-co", "premium-model", 3.0, categories=("chat",)),
    ModelEntry("metered-co", "free-model", 0.0, free=True),
    ModelEntry("metered-co", "Llama-3:FREE", None, free=True),
    ModelEntry("claude", "claude-sonnet-4-5", 3.0, categories=("coding", "reasoning")),
    ModelEntry("claude", "claude-opus-4-1", 15.0, categories=("coding", "reasoning")),
)


def win(
    pct: float = 50.0,
    *,
    name: str = "5h",
    reset: datetime | None = None,
    scope: Sequence[str] = (),
    latched: bool = False,
) -> Window:
    return Window(name=name, remaining_pct=pct, reset_at=reset, scope_models=tuple(scope), latched=latched)


def reading(
    *windows: Window,
    age_s: float = 1.0,
    verifiable: bool = True,
    observed: Overage | None = None,
) -> Reading:
    return Reading(
        fetched_at=NOW - timedelta(seconds=age_s),
        windows=windows,
        verifiable=verifiable,
        observed_overage=observed,
    )


HEALTHY = reading(win(50.0))


def plan(cid: str = "s1", *, quota: Reading | None = HEALTHY, **kw: Any) -> Connection:
    """A curated plan connection (planned/oauth: subscription, hard-stop)."""
    return Connection(id=cid, provider="planned", auth_type="oauth", reading=quota, **kw)


def key(cid: str = "k1", *, quota: Reading | None = None, **kw: Any) -> Connection:
    """A metered API key (metered-co provider-wide row)."""
    return Connection(id=cid, provider="metered-co", auth_type="apikey", reading=quota, **kw)


def keyless(cid: str = "free1", **kw: Any) -> Connection:
    return Connection(id=cid, provider="anything", keyless=True, **kw)


def snap(
    *connections: Connection,
    config: LadderConfig | None = None,
    spend: Mapping[str, float] | None = None,
    catalog: Sequence[CatalogEntry] = CATALOG,
    models: Sequence[ModelEntry] = MODELS,
) -> Snapshot:
    return Snapshot(
        config=config or LadderConfig(),
        billing_catalog=tuple(catalog),
        models=tuple(models),
        connections=connections,
        spend_usd=dict(spend or {}),
    )


def concrete(connection: Connection | str, provider: str = "planned", model: str = "m1") -> Candidate:
    cid = connection if isinstance(connection, str) else connection.id
    return Candidate(provider, model, cid, (cid,))


def logical(ids: Sequence[str], provider: str = "planned", model: str = "m1") -> Candidate:
    return Candidate(provider, model, None, tuple(ids))


def run(
    model: str,
    *connections: Connection,
    candidates: Sequence[Candidate] | None = None,
    now: datetime = NOW,
    **snap_kw: Any,
) -> Resolution:
    return resolve(snap(*connections, **snap_kw), model, candidates, now)


def sub(connection: Connection, provider: str = "planned", model: str = "m1", **snap_kw: Any) -> Resolution:
    """auto/subscription over one concrete candidate for this connection."""
    return run("auto/subscription", connection, candidates=[concrete(connection, provider, model)], **snap_kw)


def thrifty(
    connection: Connection, provider: str = "planned", model: str = "plan-model", **snap_kw: Any
) -> Resolution:
    """auto/thrifty over one concrete candidate for this connection."""
    return run("auto/thrifty", connection, candidates=[concrete(connection, provider, model)], **snap_kw)


def reasons(resolution: Resolution) -> list[tuple[str, str]]:
    return [(x.connection_id, x.reason) for x in resolution.excluded]


def pool_ids(resolution: Resolution) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(e.model, int(e.rung), e.allowed_connection_ids) for e in resolution.pool]
