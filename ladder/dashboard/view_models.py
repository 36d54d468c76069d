"""Read-side view models of the dashboard, built from the same snapshot and domain calls as the API.

Views only render what is built here. The overview and the pool preview call ``snapshot_load`` and
``resolve`` exactly as the API does, so the dashboard and the gateway never disagree. The overview
costs the snapshot's queries whatever the number of connections. The words they use are in
``wording``, the connection page's chart in ``chart``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from urllib.parse import quote, urlencode

from django.db.models import Count, Min, Sum
from django.urls import reverse
from msgspec.structs import replace

from ladder import models as m
from ladder.dashboard.chart import (
    CHART_AUTO_LOOKBACK,
    CHART_RANGES,
    Chart,
    WindowPoint,
    chart_build,
    chart_range_auto,
)
from ladder.dashboard.wording import (
    RUNG_TITLES,
    duration_words,
    forecast_words,
    pct_label,
    reason_words,
    rung_words,
    until_words,
)
from ladder.domain import (
    AutoIdError,
    Candidate,
    Connection,
    Resolution,
    Rung,
    Snapshot,
    Window,
    advertised_auto_ids,
    catalog_candidates,
    classify_billing,
    resolve,
    rung_budgets,
    rung_for,
)
from ladder.domain.autoid import parse_auto_id
from ladder.domain.billing import BillingVerdict, catalog_key_label
from ladder.domain.budgets import RungBudget
from ladder.domain.credentials import (
    NEEDS_REAUTH,
    REFRESHABLE_KINDS,
    connection_kind,
    default_owner,
    expires_in_text,
)
from ladder.domain.scopes import scope_words
from ladder.domain.types import LadderConfig, Thresholds
from ladder.domain.windows import connection_limits, is_too_old, is_usable, reading_age_s, reset_passed
from ladder.security.logredact import redact_url
from ladder.selectors.alerts import (
    alert_channels_all,
    alert_deliveries_recent,
    alert_delivery_counts,
    alert_episodes_closed,
    alert_episodes_open,
    alert_rules_all,
)
from ladder.selectors.escalations import escalation_auto_ids, escalations_latest
from ladder.selectors.snapshot import catalog_uncurated_kinds, snapshot_load

PREVIEW_DEFAULT = "auto/subscription"


@lru_cache(maxsize=1)
def _connection_url_prefix() -> str:
    # reverse() once: the overview links thousands of cards. The placeholder is a valid id.
    return reverse("ladder:connection_page", args=["x"])[: -len("x/")]


def connection_url(connection_id: str) -> str:
    return f"{_connection_url_prefix()}{quote(connection_id, safe='')}/"


def preview_url(auto_id: str) -> str:
    return f"{reverse('ladder:pool_preview')}?{urlencode({'model': auto_id})}"


# ---------------------------------------------------------------------------------------------------
# Overview


@dataclass(frozen=True)
class WindowView:
    name: str
    remaining_pct: float
    cutoff_pct: float  # the connection's: max(exit cutoff, reserve) (DESIGN L6)
    floor_pct: float  # the connection's re-entry floor, shifted up by its reserve
    latched: bool
    usable: bool
    reset_at: datetime | None
    reset_in: str
    reset_passed: bool
    scope: str
    exit_cutoff_pct: float = 0.0  # the global exit cutoff: at or below it the window is spent
    reserve_pct: float | None = None
    forecast: str = ""  # "runs out at 14:20 UTC, 40m before its reset"; "" without a forecast

    @property
    def state(self) -> str:
        if not self.usable:
            if self.remaining_pct <= self.exit_cutoff_pct:
                return "exhausted"
            if self.reserve_pct is not None and self.remaining_pct <= self.reserve_pct:
                return "reserved"
            return "latched"
        return "band" if self.remaining_pct <= self.floor_pct else "ok"

    @property
    def reserve_w(self) -> str:
        """The reserve's own band on the bar: from the exit cutoff up to the connection's cutoff."""
        return f"{max(0.0, self.cutoff_pct - self.exit_cutoff_pct):.2f}"

    @property
    def band_width_pct(self) -> float:
        return max(0.0, self.floor_pct - self.cutoff_pct)

    # Pre-formatted numbers of the bar (0–100 user units): cheaper than template filters on 1,000s of bars.
    @property
    def pct_label(self) -> str:
        return pct_label(self.remaining_pct)

    @property
    def fill_x(self) -> str:
        return f"{self.remaining_pct:.2f}"

    @property
    def cutoff_x(self) -> str:
        return f"{self.cutoff_pct:.2f}"

    @property
    def floor_x(self) -> str:
        return f"{self.floor_pct:.2f}"

    @property
    def band_w(self) -> str:
        return f"{self.band_width_pct:.2f}"

    @property
    def aria(self) -> str:
        reserve = (
            f", reserve {pct_label(self.reserve_pct)}% kept for your own use"
            if self.reserve_pct is not None and self.cutoff_pct > self.exit_cutoff_pct
            else ""
        )
        return (
            f"{self.name}: {self.pct_label}% remaining; exit cutoff {pct_label(self.exit_cutoff_pct)}%"
            f"{reserve}, re-entry floor {pct_label(self.floor_pct)}%"
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
    rung: str
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


@dataclass(frozen=True)
class AutoIdLink:
    auto_id: str
    url: str


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
        cutoff_pct=limits.cutoff_pct,
        floor_pct=limits.floor_pct,
        latched=window.latched,
        usable=is_usable(window, limits),
        reset_at=window.reset_at,
        reset_in=until_words(window.reset_at, now),
        reset_passed=reset_passed(window, now),
        scope=scope_words(window.scope_models),
        exit_cutoff_pct=limits.exit_cutoff_pct,
        reserve_pct=limits.reserve_pct,
        forecast=forecast_words(window.exhausts_at, window.reset_at, now),
    )


def _card(
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


def _budget_view(budget: RungBudget, now: datetime) -> BudgetView:
    return BudgetView(
        rung=budget.rung,
        budget_usd=budget.budget_usd,
        spent_usd=budget.spent_usd,
        period_ends_at=budget.period_ends_at,
        period_ends_in=until_words(budget.period_ends_at, now),
    )


def _pool_members(resolution: Resolution) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str]]:
    members = {(cid, e.model) for e in resolution.pool for cid in e.allowed_connection_ids}
    reasons = {(x.connection_id, x.model): x.reason for x in resolution.excluded}
    return members, reasons


def _pool_state(
    grouping: str, card: ConnectionCard, members: set[tuple[str, str]], reasons: dict[tuple[str, str], str]
) -> PoolState:
    inside = sum(1 for model in card.models if (card.id, model) in members)
    seen: dict[str, None] = {}
    for model in card.models:
        code = reasons.get((card.id, model))
        if code is not None:
            seen[reason_words(code, reserve_pct=card.reserve_pct)] = None
    return PoolState(grouping, inside, len(card.models), tuple(seen))


def auto_id_links(snapshot: Snapshot) -> list[AutoIdLink]:
    categories = {c for entry in snapshot.models for c in entry.categories}
    return [AutoIdLink(auto_id, preview_url(auto_id)) for auto_id in advertised_auto_ids(categories)]


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
                card = cards[key] = _card(connection, verdicts[connection_id], config, now, quota)
            card.models.append(candidate.model)

    subscription = _pool_members(resolve(snapshot, "auto/subscription", candidates, now))
    thrifty = _pool_members(resolve(snapshot, "auto/thrifty", candidates, now))
    columns = {rung: RungColumn(rung, RUNG_TITLES[rung], [], None) for rung in Rung}
    budgets = rung_budgets(config, snapshot.spend_usd, now)
    for rung, budget in budgets.items():
        columns[rung].budget = _budget_view(budget, now)
    order = {c.id: index for index, c in enumerate(snapshot.connections)}
    for (_, rung), card in sorted(cards.items(), key=lambda item: (item[0][1], order[item[0][0]])):
        if rung == Rung.SUBSCRIPTION:
            card.pools.append(_pool_state("auto/subscription", card, *subscription))
        card.pools.append(_pool_state("auto/thrifty", card, *thrifty))
        columns[rung].cards.append(card)

    placed = {connection_id for connection_id, _ in cards}
    unplaced = [
        _card(c, verdicts[c.id], config, now, quota=False)
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


# ---------------------------------------------------------------------------------------------------
# Pool preview


@dataclass(frozen=True)
class PreviewEntry:
    position: int
    rung: str
    rung_index: int
    provider: str
    model: str
    connection_ids: tuple[str, ...]


@dataclass(frozen=True)
class PreviewExclusion:
    provider: str
    model: str
    connection_id: str
    rung: str
    reason: str
    reason_words: str
    detail: str


@dataclass
class Preview:
    auto_id: str
    error: str
    now: datetime
    auto_ids: list[AutoIdLink]
    pool: list[PreviewEntry] = field(default_factory=list)
    excluded: list[PreviewExclusion] = field(default_factory=list)
    empty_code: str = ""
    empty_message: str = ""
    retry_at: datetime | None = None
    retry_in: str = ""
    refresh: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.error and not self.pool


def _reserve_of(connection: Connection | None) -> float | None:
    return None if connection is None else connection.reserve_pct


def preview_build(*, auto_id: str, now: datetime, candidates: list[Candidate] | None = None) -> Preview:
    snapshot = snapshot_load(now=now)
    preview = Preview(auto_id=auto_id, error="", now=now, auto_ids=auto_id_links(snapshot))
    try:
        resolution = resolve(snapshot, auto_id, candidates, now)
    except AutoIdError as exc:
        preview.error = str(exc)
        return preview
    preview.pool = [
        PreviewEntry(i, e.rung.label, int(e.rung), e.provider, e.model, e.allowed_connection_ids)
        for i, e in enumerate(resolution.pool, start=1)
    ]
    by_id = snapshot.connections_by_id
    preview.excluded = [
        PreviewExclusion(
            x.provider,
            x.model,
            x.connection_id,
            x.rung.label if x.rung is not None else "—",
            x.reason,
            reason_words(x.reason, reserve_pct=_reserve_of(by_id.get(x.connection_id))),
            x.detail,
        )
        for x in resolution.excluded
    ]
    if resolution.empty is not None:
        preview.empty_code = resolution.empty.code
        preview.empty_message = resolution.empty.message
        preview.retry_at = resolution.empty.retry_at
        preview.retry_in = until_words(resolution.empty.retry_at, now) if resolution.empty.retry_at else ""
    preview.refresh = resolution.refresh
    return preview


# ---------------------------------------------------------------------------------------------------
# Connection page


@dataclass(frozen=True)
class FailureRow:
    observed_at: datetime
    status: int
    classification: str
    window: str
    cooldown_until: datetime | None
    detail: str
    source: str


@dataclass(frozen=True)
class UsageRow:
    occurred_at: datetime
    model: str
    input_tokens: int
    output_tokens: int
    rung: str
    cost_usd: float


@dataclass(frozen=True)
class CredentialView:
    """What the page tells about the credential: never the secret."""

    stored: bool
    owner: str
    expires: str  # "expires in 3 h", "expired 5 min ago", "expiry unknown"
    account: str
    needs_reauth: bool
    file_kind: str | None  # the kind whose CLI file can be pasted here, None: a plain key
    owner_required: bool  # a rotating kind: the form asks who refreshes


def credential_view(row: m.Connection, now: datetime) -> CredentialView:
    kind = connection_kind(row)
    return CredentialView(
        stored=row.has_credential,
        owner=row.credential_owner,
        expires=expires_in_text(row.credential_expires_at, now),
        account=row.credential_account_id,
        needs_reauth=row.disabled_reason == NEEDS_REAUTH,
        file_kind=kind if kind in REFRESHABLE_KINDS else None,
        owner_required=default_owner(kind) is None,
    )


@dataclass
class ConnectionPage:
    card: ConnectionCard
    row: m.Connection
    chart: Chart
    failures: list[FailureRow]
    usage: list[UsageRow]
    usage_24h_usd: float
    usage_24h_count: int
    last_poll_error: str
    last_polled_at: datetime | None
    next_refresh_at: datetime | None
    credential: CredentialView


USAGE_SPAN = timedelta(hours=24)
CHART_COOLDOWNS_MAX = 200


def _chart_of(connection: Connection, config: LadderConfig, now: datetime, chart_range: str | None) -> Chart:
    """The chart over ``chart_range``, or over the smallest automatic range that holds the last 24
    hours' readings (one more query). One query for the windows' values, one for the cooldowns."""
    readings = m.QuotaReading.objects.filter(connection_id=connection.id, fetched_at__lte=now)
    if chart_range is None:
        oldest = readings.filter(fetched_at__gte=now - CHART_AUTO_LOOKBACK).aggregate(at=Min("fetched_at"))
        range_key = chart_range_auto(oldest["at"], now)
    else:
        range_key = chart_range
    start = now - CHART_RANGES[range_key][0]
    rows = (
        m.QuotaWindow.objects.filter(
            reading__connection_id=connection.id, reading__fetched_at__gte=start, reading__fetched_at__lte=now
        )
        .order_by("reading__fetched_at", "reading_id", "position", "id")
        .values_list("reading_id", "reading__fetched_at", "name", "remaining_pct", "reset_at")
    )
    failures = list(
        m.FailureEvent.objects.filter(
            connection_id=connection.id, cooldown_until__gt=start, observed_at__lte=now
        ).order_by("-observed_at", "-id")[:CHART_COOLDOWNS_MAX]
    )
    forecasts = {}
    if connection.reading is not None:
        forecasts = {w.name: w.exhausts_at for w in connection.reading.windows if w.exhausts_at is not None}
    return chart_build(
        [WindowPoint(*row) for row in rows],
        failures,
        connection.cooldown_until,
        connection_limits(connection, config),
        now,
        range_key=range_key,
        range_chosen=chart_range is not None,
        exhausts_at=forecasts,
    )


def connection_page_build(
    *, connection_id: str, now: datetime, chart_range: str | None = None
) -> ConnectionPage | None:
    """The connection page; ``chart_range`` is one of ``chart.CHART_RANGES`` (None: the smallest that
    holds the last 24 hours' readings)."""
    snapshot = snapshot_load(now=now)
    connection = snapshot.connections_by_id.get(connection_id)
    row = m.Connection.objects.filter(pk=connection_id).first()
    if connection is None or row is None:
        return None
    config = snapshot.config
    verdict = classify_billing(connection, snapshot.catalog_by_key)
    card = _card(connection, verdict, config, now, quota=True)
    overview = overview_from_snapshot(snapshot, now=now, only=connection_id)
    for column in overview.rungs:
        for other in column.cards:
            if other.id == connection_id:
                card.models.extend(f"{model} (rung {column.rung.label})" for model in other.models)
                card.pools.extend(other.pools)
    chart = _chart_of(connection, config, now, chart_range)
    failures = list(
        m.FailureEvent.objects.filter(connection_id=connection_id).order_by("-observed_at", "-id")[:20]
    )
    start = now - USAGE_SPAN
    usage_rows = list(
        m.UsageEvent.objects.filter(connection_id=connection_id).order_by("-occurred_at", "-id")[:20]
    )
    totals = m.UsageEvent.objects.filter(connection_id=connection_id, occurred_at__gte=start).aggregate(
        total=Sum("cost_usd"), count=Count("id")
    )
    rung_labels = {int(r): r.label for r in Rung}
    return ConnectionPage(
        card=card,
        row=row,
        chart=chart,
        failures=[
            FailureRow(
                f.observed_at, f.status, f.classification, f.window, f.cooldown_until, f.detail, f.source
            )
            for f in failures
        ],
        usage=[
            UsageRow(
                u.occurred_at,
                u.model or "",
                u.input_tokens,
                u.output_tokens,
                rung_labels.get(u.rung, "—") if u.rung is not None else "—",
                float(u.cost_usd),
            )
            for u in usage_rows
        ],
        usage_24h_usd=float(totals["total"] or 0),
        usage_24h_count=int(totals["count"] or 0),
        last_poll_error=row.last_poll_error,
        last_polled_at=row.last_polled_at,
        next_refresh_at=row.next_refresh_at,
        credential=credential_view(row, now),
    )


# ---------------------------------------------------------------------------------------------------
# Catalog


@dataclass(frozen=True)
class UncuratedKind:
    provider: str
    auth_type: str | None
    label: str
    connection_ids: tuple[str, ...]

    @property
    def defaults(self) -> dict[str, str]:
        """An uncurated kind starts as unknown/unknown: the operator must choose, never a guess."""
        return {"billing": "unknown", "overage": "unknown"}

    @property
    def slug(self) -> str:
        return f"{self.provider}--{self.auth_type or 'any'}".replace(".", "-").replace(":", "-")


@dataclass
class CatalogPage:
    entries: list[m.BillingCatalogEntry]
    uncurated: list[UncuratedKind]


def catalog_history(*, limit: int = 50) -> list[m.CatalogChange]:
    return list(m.CatalogChange.objects.order_by("-changed_at", "-id")[:limit])


def catalog_page_build(*, now: datetime) -> CatalogPage:
    snapshot = snapshot_load(now=now)
    by_kind: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for connection in snapshot.connections:
        by_kind[(connection.provider, connection.auth_type)].append(connection.id)
    uncurated = [
        UncuratedKind(provider, auth, catalog_key_label(provider, auth), tuple(by_kind[(provider, auth)]))
        for provider, auth in catalog_uncurated_kinds(snapshot=snapshot)
    ]
    entries = list(m.BillingCatalogEntry.objects.order_by("provider", "auth_type", "id"))
    return CatalogPage(entries=entries, uncurated=uncurated)


# ---------------------------------------------------------------------------------------------------
# Escalation log

TIMELINE_LIMIT = 100
KIND_WORDS = {"up": "climbed", "down": "came back down", "empty": "turned empty"}


@dataclass(frozen=True)
class TimelineEntry:
    occurred_at: datetime
    ago: str
    auto_id: str
    auto_id_url: str
    kind: str
    kind_words: str
    from_label: str
    to_label: str
    from_index: int | None
    to_index: int | None
    why: str


@dataclass
class Timeline:
    now: datetime
    auto_id: str  # "" = every auto id
    error: str
    filters: list[AutoIdLink]
    entries: list[TimelineEntry] = field(default_factory=list)
    limit: int = TIMELINE_LIMIT

    @property
    def truncated(self) -> bool:
        return len(self.entries) >= self.limit


def timeline_url(auto_id: str = "") -> str:
    base = reverse("ladder:escalations_page")
    return f"{base}?{urlencode({'model': auto_id})}" if auto_id else base


def timeline_build(*, now: datetime, auto_id: str = "") -> Timeline:
    """The escalation log, newest first: each change of the rung an auto id's gateway resolutions start
    on. Two queries."""
    timeline = Timeline(now=now, auto_id=auto_id, error="", filters=[])
    if auto_id:
        try:
            parse_auto_id(auto_id)
        except AutoIdError as exc:
            timeline.error = str(exc)
            return timeline
    timeline.filters = [AutoIdLink(known, timeline_url(known)) for known in escalation_auto_ids()]
    timeline.entries = [
        TimelineEntry(
            occurred_at=event.occurred_at,
            ago=duration_words((now - event.occurred_at).total_seconds()),
            auto_id=event.auto_id,
            auto_id_url=preview_url(event.auto_id),
            kind=event.kind,
            kind_words=KIND_WORDS.get(event.kind, event.kind),
            from_label=rung_words(event.from_rung),
            to_label=rung_words(event.to_rung),
            from_index=event.from_rung,
            to_index=event.to_rung,
            why=event.why,
        )
        for event in escalations_latest(auto_id=auto_id or None, limit=TIMELINE_LIMIT)
    ]
    return timeline


# ---------------------------------------------------------------------------------------------------
# Alerts

ALERT_HISTORY_PAGE = 50
ALERT_DELIVERIES_SHOWN = 100


@dataclass(frozen=True)
class EpisodeRow:
    id: int
    rule: str
    kind: str
    subject: str
    summary: str
    opened_at: datetime
    closed_at: datetime | None
    lasted: str  # "open for 12m" / "lasted 1h 05m"


@dataclass(frozen=True)
class DeliveryRow:
    delivery_id: str
    created_at: datetime
    event: str
    channel: str
    subject: str
    status: str
    attempts: int
    last_error: str
    sent_at: datetime | None


@dataclass(frozen=True)
class ChannelRow:
    id: int
    name: str
    kind: str
    destination: str  # a webhook's host (its path may hold a token) or the e-mail addresses
    enabled: bool


@dataclass(frozen=True)
class RuleRow:
    id: int
    name: str
    kind: str
    target: str
    threshold: int | None
    quiet_period_s: int
    enabled: bool
    channels: str


@dataclass
class AlertsPage:
    now: datetime
    open: list[EpisodeRow]
    history: list[EpisodeRow]
    page: int
    has_older: bool
    deliveries: list[DeliveryRow]
    delivery_counts: dict[str, int]
    status: str  # "" = every status
    channels: list[ChannelRow]
    rules: list[RuleRow]

    @property
    def older_page(self) -> int:
        return self.page + 1

    @property
    def newer_page(self) -> int:
        return self.page - 1


def _episode_row(episode: m.AlertEpisode, now: datetime) -> EpisodeRow:
    closed = episode.closed_at
    lasted = (
        f"open for {duration_words((now - episode.opened_at).total_seconds())}"
        if closed is None
        else f"lasted {duration_words((closed - episode.opened_at).total_seconds())}"
    )
    return EpisodeRow(
        episode.pk,
        episode.rule.name,
        episode.rule.kind,
        episode.subject,
        episode.summary,
        episode.opened_at,
        closed,
        lasted,
    )


def _destination(channel: m.AlertChannel) -> str:
    if channel.kind == "email":
        return channel.email_to.replace("\n", ", ")
    return redact_url(channel.url) if channel.url else "no url"


def _delivery_row(delivery: m.AlertDelivery) -> DeliveryRow:
    subject = delivery.episode.subject if delivery.episode is not None else "test"
    return DeliveryRow(
        str(delivery.delivery_id),
        delivery.created_at,
        delivery.event,
        delivery.channel.name,
        subject,
        delivery.status,
        delivery.attempts,
        delivery.last_error,
        delivery.sent_at,
    )


def alerts_page_build(*, now: datetime, page: int = 1, status: str = "") -> AlertsPage:
    """The alerts page: open episodes, one page of the closed ones, the latest deliveries (failed
    ones counted and filterable), the channels and the rules. A fixed number of queries."""
    history = alert_episodes_closed(offset=(page - 1) * ALERT_HISTORY_PAGE, limit=ALERT_HISTORY_PAGE)
    return AlertsPage(
        now=now,
        open=[_episode_row(e, now) for e in alert_episodes_open()],
        history=[_episode_row(e, now) for e in history[:ALERT_HISTORY_PAGE]],
        page=page,
        has_older=len(history) > ALERT_HISTORY_PAGE,
        deliveries=[
            _delivery_row(d)
            for d in alert_deliveries_recent(status=status or None, limit=ALERT_DELIVERIES_SHOWN)
        ],
        delivery_counts=alert_delivery_counts(),
        status=status,
        channels=[ChannelRow(c.pk, c.name, c.kind, _destination(c), c.enabled) for c in alert_channels_all()],
        rules=[
            RuleRow(
                r.pk,
                r.name,
                r.kind,
                r.target,
                r.threshold,
                r.quiet_period_s,
                r.enabled,
                ", ".join(c.name for c in r.channels.all()) or "every enabled channel",
            )
            for r in alert_rules_all()
        ],
    )
