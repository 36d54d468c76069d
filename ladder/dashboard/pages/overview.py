"""The overview: each rung's connection cards with their windows, pools and budget. It costs the
snapshot's queries whatever the number of connections."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from msgspec.structs import replace

from ladder.dashboard.pages.links import AutoIdLink, auto_id_links, connection_url
from ladder.dashboard.wording import (
    RUNG_TITLES,
    duration_words,
    forecast_words,
    pct_label,
    reason_words,
    until_words,
)
from ladder.domain import (
    Connection,
    Resolution,
    Rung,
    Snapshot,
    Window,
    catalog_candidates,
    classify_billing,
    resolve,
    rung_budgets,
    rung_for,
)
from ladder.domain.billing import BillingVerdict
from ladder.domain.scopes import scope_words
from ladder.domain.types import LadderConfig, Thresholds
from ladder.domain.windows import connection_limits, is_too_old, is_usable, reading_age_s
from ladder.selectors.snapshot import catalog_uncurated_kinds, snapshot_load


@dataclass(frozen=True)
class WindowView:
    name: str
    remaining_pct: float
    # The connection's: its cutoff, max(exit cutoff, reserve) (DESIGN L6), its re-entry floor shifted
    # up by the reserve, and the global exit cutoff (at or below it the window is spent).
    limits: Thresholds
    latched: bool
    usable: bool
    reset_in: str
    scope: str
    forecast: str = ""  # "runs out at 14:20 UTC, 40m before its reset"; "" without a forecast

    @property
    def state(self) -> str:
        limits = self.limits
        if not self.usable:
            if self.remaining_pct <= limits.exit_cutoff_pct:
                return "exhausted"
            if limits.reserve_pct is not None and self.remaining_pct <= limits.reserve_pct:
                return "reserved"
            return "latched"
        return "band" if self.remaining_pct <= limits.floor_pct else "ok"

    @property
    def pct_label(self) -> str:
        return pct_label(self.remaining_pct)

    @property
    def aria(self) -> str:
        limits = self.limits
        reserve = (
            f", reserve {pct_label(limits.reserve_pct)}% kept for your own use"
            if limits.reserve_pct is not None and limits.cutoff_pct > limits.exit_cutoff_pct
            else ""
        )
        return (
            f"{self.name}: {self.pct_label}% remaining; exit cutoff {pct_label(limits.exit_cutoff_pct)}%"
            f"{reserve}, re-entry floor {pct_label(limits.floor_pct)}%"
        )


@dataclass(frozen=True)
class PoolState:
    grouping: str
    in_pool: int
    models: int
    reasons: tuple[str, ...]  # plain words of every exclusion reason of this card

    @property
    def label(self) -> str:
        if self.in_pool == self.models:
            return "in pool"
        if self.in_pool == 0:
            return "out of pool"
        return f"in pool for {self.in_pool} of {self.models} models"

    @property
    def css(self) -> str:
        return "in" if self.in_pool == self.models else ("out" if self.in_pool == 0 else "part")


@dataclass
class ConnectionCard:
    id: str
    provider: str
    auth_type: str
    keyless: bool
    enabled: bool
    disabled_reason: str
    billing: str
    overage: str
    overage_source: str
    curated: bool
    cooldown_until: datetime | None
    cooldown_in: str
    reading_age: str
    reading_source: str
    reading_verifiable: bool
    reading_note: str
    reading_stale: bool
    windows: tuple[WindowView, ...]
    reserve_pct: float | None = None
    models: list[str] = field(default_factory=list)
    pools: list[PoolState] = field(default_factory=list)

    @property
    def url(self) -> str:
        return connection_url(self.id)

    @property
    def models_label(self) -> str:
        count = len(self.models)
        return f"{count} model{'' if count == 1 else 's'}"

    @property
    def models_text(self) -> str:
        return ", ".join(self.models)


@dataclass(frozen=True)
class BudgetView:
    budget_usd: float | None
    spent_usd: float
    period_ends_at: datetime
    period_ends_in: str

    @property
    def state(self) -> str:
        if self.budget_usd is None:
            return "none"
        if self.budget_usd == 0:
            return "disabled"
        return "exhausted" if self.spent_usd >= self.budget_usd else "ok"

    @property
    def spent_pct(self) -> float:
        if not self.budget_usd:
            return 0.0
        return min(100.0, 100.0 * self.spent_usd / self.budget_usd)


@dataclass
class RungColumn:
    rung: Rung
    title: str
    cards: list[ConnectionCard]
    budget: BudgetView | None


@dataclass
class Overview:
    now: datetime
    rungs: list[RungColumn]
    unplaced: list[ConnectionCard]
    auto_ids: list[AutoIdLink]
    uncurated: list[str]
    connection_count: int
    config: LadderConfig


def _window_view(window: Window, limits: Thresholds, now: datetime) -> WindowView:
    return WindowView(
        name=window.name,
        remaining_pct=window.remaining_pct,
        limits=limits,
        latched=window.latched,
        usable=is_usable(window, limits),
        reset_in=until_words(window.reset_at, now),
        scope=scope_words(window.scope_models),
        forecast=forecast_words(window.exhausts_at, window.reset_at, now),
    )


def connection_card(
    connection: Connection, verdict: BillingVerdict, config: LadderConfig, now: datetime, quota: bool
) -> ConnectionCard:
    reading = connection.reading
    cooling = connection.cooldown_until is not None and connection.cooldown_until > now
    limits = connection_limits(connection, config)
    return ConnectionCard(
        id=connection.id,
        provider=connection.provider,
        auth_type=connection.auth_type or "provider-wide",
        keyless=connection.keyless,
        enabled=connection.enabled,
        disabled_reason=connection.disabled_reason or "",
        billing=verdict.billing,
        overage=verdict.overage,
        overage_source=verdict.overage_source,
        curated=verdict.curated,
        cooldown_until=connection.cooldown_until if cooling else None,
        cooldown_in=until_words(connection.cooldown_until, now) if cooling else "",
        reading_age=duration_words(reading_age_s(reading, now)) if reading else "",
        reading_source=reading.source if reading else "",
        reading_verifiable=reading.verifiable if reading else False,
        reading_note=reading.note if reading else "",
        reading_stale=bool(reading and is_too_old(reading, now, limits)),
        windows=tuple(_window_view(w, limits, now) for w in reading.windows) if (reading and quota) else (),
        reserve_pct=connection.reserve_pct,
    )


def _pool_members(resolution: Resolution) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str]]:
    members = {(cid, e.model) for e in resolution.pool for cid in e.allowed_connection_ids}
    reasons = {(x.connection_id, x.model): x.reason for x in resolution.excluded}
    return members, reasons


def _pool_state(
    grouping: str, card: ConnectionCard, members: set[tuple[str, str]], reasons: dict[tuple[str, str], str]
) -> PoolState:
    inside = sum(1 for model in card.models if (card.id, model) in members)
    codes = [reasons[card.id, model] for model in card.models if (card.id, model) in reasons]
    # Each reason's words once, in the order of the models.
    words = dict.fromkeys(reason_words(code, reserve_pct=card.reserve_pct) for code in codes)
    return PoolState(grouping, inside, len(card.models), tuple(words))


def overview_build(*, now: datetime) -> Overview:
    return overview_from_snapshot(snapshot_load(now=now), now=now)


def overview_from_snapshot(snapshot: Snapshot, *, now: datetime, only: str | None = None) -> Overview:
    """The overview; with ``only``, just that connection's cards (each pair is judged on its own, so
    its verdicts are the same as in the whole overview)."""
    config = snapshot.config
    candidates = catalog_candidates(snapshot, None)
    if only is not None:
        candidates = [
            replace(c, allowed_connection_ids=(only,)) for c in candidates if only in c.allowed_connection_ids
        ]
    verdicts = {c.id: classify_billing(c, snapshot.catalog_by_key) for c in snapshot.connections}
    cards: dict[tuple[str, Rung], ConnectionCard] = {}
    for candidate in candidates:
        entry = snapshot.models_by_key.get((candidate.provider, candidate.model))
        for connection_id in candidate.allowed_connection_ids:
            connection = snapshot.connections_by_id[connection_id]
            rung = rung_for(verdicts[connection_id].billing, entry, config)
            key = (connection_id, rung)
            card = cards.get(key)
            if card is None:
                quota = rung in (Rung.SUBSCRIPTION, Rung.FREE) and not connection.keyless
                card = cards[key] = connection_card(connection, verdicts[connection_id], config, now, quota)
            card.models.append(candidate.model)

    subscription = _pool_members(resolve(snapshot, "auto/subscription", candidates, now))
    thrifty = _pool_members(resolve(snapshot, "auto/thrifty", candidates, now))
    columns = {rung: RungColumn(rung, RUNG_TITLES[rung], [], None) for rung in Rung}
    for rung, budget in rung_budgets(config, snapshot.spend_usd, now).items():
        ends_in = until_words(budget.period_ends_at, now)
        columns[rung].budget = BudgetView(budget.budget_usd, budget.spent_usd, budget.period_ends_at, ends_in)
    order = {c.id: index for index, c in enumerate(snapshot.connections)}
    for (_, rung), card in sorted(cards.items(), key=lambda item: (item[0][1], order[item[0][0]])):
        if rung == Rung.SUBSCRIPTION:
            card.pools.append(_pool_state("auto/subscription", card, *subscription))
        card.pools.append(_pool_state("auto/thrifty", card, *thrifty))
        columns[rung].cards.append(card)

    placed = {connection_id for connection_id, _ in cards}
    unplaced = [
        connection_card(c, verdicts[c.id], config, now, quota=False)
        for c in snapshot.connections
        if c.id not in placed and only in (None, c.id)
    ]
    uncurated = [
        f"{provider}/{auth or 'provider-wide'}"
        for provider, auth in catalog_uncurated_kinds(snapshot=snapshot)
    ]
    return Overview(
        now=now,
        rungs=[columns[rung] for rung in Rung],
        unplaced=unplaced,
        auto_ids=auto_id_links(snapshot),
        uncurated=uncurated,
        connection_count=len(snapshot.connections),
        config=config,
    )
