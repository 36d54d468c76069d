"""L9–L12 and L14: resolve an auto id into an ordered, explained pool.

The resolution is recomputed from the snapshot at every call (L12): nothing here remembers a rung.
Each connection's billing verdict is computed once per snapshot and each (connection, model) pair once
per resolution, however many candidates name it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from ladder.domain.autoid import AutoId, parse_auto_id
from ladder.domain.billing import BillingVerdict, classify_billing
from ladder.domain.budgets import RungBudget, budget_block, rung_budgets
from ladder.domain.tiers import rung_for
from ladder.domain.timefmt import format_utc
from ladder.domain.types import (
    Candidate,
    Connection,
    Empty,
    Exclusion,
    Grouping,
    LadderConfig,
    ModelEntry,
    PoolEntry,
    Reason,
    Resolution,
    Rung,
    Snapshot,
    Window,
)
from ladder.domain.windows import (
    applicable_windows,
    blocks_as_evidence,
    is_exhausted,
    is_too_old,
    is_usable,
    reset_passed,
    scope_matches,
)

PLAN_READING_RUNGS = (Rung.SUBSCRIPTION, Rung.FREE)
# (connection id, rung) or (connection id, rung, which scoped windows apply)
PairKey = tuple[str, Rung] | tuple[str, Rung, tuple[bool, ...]]


@dataclass(frozen=True)
class PairVerdict:
    """How one (candidate model, connection) pair fares in one grouping at one moment."""

    rung: Rung
    reason: str | None
    detail: str
    # When this pair may qualify again, by its reported reason (None: unknown or never).
    retry_at: datetime | None
    refresh: bool


def billing_verdict(snapshot: Snapshot, connection: Connection) -> BillingVerdict:
    return _connection_facts(snapshot, connection)[0]


def _connection_facts(
    snapshot: Snapshot, connection: Connection
) -> tuple[BillingVerdict, tuple[tuple[str, ...], ...]]:
    """Per snapshot and connection: its billing verdict, and the scopes of its model-scoped windows."""
    memo = snapshot.memo
    facts = memo.get(connection.id)
    if facts is None:
        reading = connection.reading
        scopes = tuple(w.scope_models for w in reading.windows if w.scope_models) if reading else ()
        facts = (classify_billing(connection, snapshot.catalog_by_key), scopes)
        memo[connection.id] = facts
    return facts


@lru_cache(maxsize=65536)
def scope_mask(scopes: tuple[tuple[str, ...], ...], model: str) -> tuple[bool, ...]:
    """Which of a connection's model-scoped windows apply to the model."""
    return tuple(scope_matches(scope, model) for scope in scopes)


def catalog_candidates(snapshot: Snapshot, category: str | None) -> list[Candidate]:
    """One logical candidate per catalog model of the category, allowed = its provider's connections."""
    by_provider: dict[str, list[Connection]] = {}
    for connection in snapshot.connections:
        by_provider.setdefault(connection.provider, []).append(connection)
    candidates = []
    for entry in snapshot.models:
        if category is not None and category not in entry.categories:
            continue
        allowed = tuple(
            c.id for c in by_provider.get(entry.provider, ()) if c.models is None or entry.model in c.models
        )
        candidates.append(Candidate(entry.provider, entry.model, None, allowed))
    return candidates


def _pct(value: float) -> str:
    return f"{value:g}%"


def _window_detail(window: Window, config: LadderConfig) -> str:
    if is_exhausted(window, config):
        return f"window {window.name} at {window.remaining_pct:.1f}% ≤ cutoff {_pct(config.exit_cutoff_pct)}"
    return (
        f"window {window.name} latched at {window.remaining_pct:.1f}% ≤ re-entry floor "
        f"{_pct(config.reentry_floor_pct)}"
    )


def _blocked(blocking: list[Window], config: LadderConfig) -> tuple[str, str, datetime | None]:
    """Reason, detail and the moment all blocking windows have reset (None if one has no reset)."""
    exhausted = [w for w in blocking if is_exhausted(w, config)]
    reason = Reason.QUOTA_EXHAUSTED if exhausted else Reason.BELOW_REENTRY_FLOOR
    shown = exhausted[0] if exhausted else blocking[0]
    resets = [w.reset_at for w in blocking]
    retry_at = None if any(r is None for r in resets) else max(r for r in resets if r is not None)
    return reason, _window_detail(shown, config), retry_at


def _billing_failure(connection: Connection, verdict: BillingVerdict) -> tuple[str, str] | None:
    if verdict.billing == "keyless":
        return Reason.KEYLESS_NOT_PLAN, "keyless connections never qualify for auto/subscription"
    if not verdict.curated:
        auth = connection.auth_type or "provider-wide"
        return (
            Reason.UNCURATED_PROVIDER,
            f"no billing catalog row for {connection.provider}/{auth}: treated as metered",
        )
    if verdict.billing != "subscription":
        return Reason.NOT_PLAN_BILLING, f"billing is {verdict.billing}, not subscription"
    if verdict.overage != "hard-stop":
        return (
            Reason.OVERAGE_NOT_HARD_STOP,
            f"overage is {verdict.overage} ({verdict.overage_source}), not hard-stop",
        )
    return None


def judge_pair(
    *,
    grouping: Grouping,
    connection: Connection,
    verdict: BillingVerdict,
    model: str,
    model_entry: ModelEntry | None,
    budgets: dict[Rung, RungBudget],
    config: LadderConfig,
    now: datetime,
    rung: Rung | None = None,
) -> PairVerdict:
    if rung is None:
        rung = rung_for(verdict.billing, model_entry, config)
    reading = connection.reading
    windows = applicable_windows(reading, model) if reading is not None else ()
    # L5, computed once per pair: an old reading, or one of a period that has ended, is not fresh.
    too_old = reading is not None and is_too_old(reading, now, config)
    period_ended = any(reset_passed(w, now) for w in windows)
    cooling = connection.cooldown_until is not None and connection.cooldown_until > now
    reason: str | None = None
    detail = ""
    retry_at: datetime | None = None

    if grouping == "subscription":
        billing_failure = _billing_failure(connection, verdict)
        can_qualify = connection.enabled and billing_failure is None
        wants_reading = rung == Rung.SUBSCRIPTION and billing_failure is None
    else:
        billing_failure = None
        budget = budgets.get(rung)
        can_qualify = connection.enabled and not (budget is not None and budget.disabled)
        wants_reading = rung in PLAN_READING_RUNGS and not connection.keyless

    if not connection.enabled:
        reason = Reason.DISABLED
        detail = f"disabled ({connection.disabled_reason})" if connection.disabled_reason else "disabled"
    elif cooling:
        assert connection.cooldown_until is not None
        reason = Reason.COOLING_DOWN
        detail = f"cooling down until {format_utc(connection.cooldown_until)}"
        retry_at = connection.cooldown_until if can_qualify else None
    elif billing_failure is not None:
        reason, detail = billing_failure
    elif grouping == "subscription":
        reason, detail, retry_at = _judge_plan_reading(connection, windows, config, now)
    elif rung in budgets:
        block = budget_block(budgets[rung])
        if block is not None:
            reason, detail = block
            if reason == Reason.BUDGET_EXHAUSTED:
                retry_at = budgets[rung].period_ends_at
    elif rung in PLAN_READING_RUNGS and reading is not None and reading.verifiable:
        fresh = not too_old and not period_ended
        evidence = [w for w in windows if blocks_as_evidence(w, fresh, now, config)]
        if evidence:
            reason, detail, retry_at = _blocked(evidence, config)

    refresh = (
        wants_reading and connection.enabled and not cooling and (reading is None or too_old or period_ended)
    )
    if retry_at is not None and retry_at <= now:
        retry_at = None
    return PairVerdict(rung, reason, detail, retry_at, refresh)


def _judge_plan_reading(
    connection: Connection, windows: tuple[Window, ...], config: LadderConfig, now: datetime
) -> tuple[str | None, str, datetime | None]:
    """L9's reading checks for a plan pair that passed the billing checks."""
    reading = connection.reading
    if reading is None:
        return Reason.NO_READING, "no quota reading yet", None
    if not reading.verifiable:
        # A fixed text: the adapter's note is not part of the state file, and the offline resolver and
        # the API must print the same document for the same state.
        return Reason.READING_UNVERIFIABLE, "the adapter could not verify the reading", None
    if not windows:
        return Reason.READING_UNVERIFIABLE, "no quota window of the reading applies to this model", None
    for window in windows:
        if reset_passed(window, now):
            assert window.reset_at is not None
            return (
                Reason.WINDOW_RESET_PASSED,
                f"window {window.name} reset at {format_utc(window.reset_at)}: reading is of a past period",
                None,
            )
    if is_too_old(reading, now, config):
        age = (now - reading.fetched_at).total_seconds()
        return Reason.READING_STALE, f"reading is {age:.0f}s old > {config.max_reading_age_s:g}s", None
    blocking = [w for w in windows if not is_usable(w, config)]
    if blocking:
        return _blocked(blocking, config)
    return None, "", None


def resolve(
    snapshot: Snapshot,
    model: str,
    candidates: Sequence[Candidate] | None,
    now: datetime,
) -> Resolution:
    """The pool for an auto id. Raises AutoIdError for an id outside the grammar (L13)."""
    auto: AutoId = parse_auto_id(model)
    grouping = auto.grouping
    config = snapshot.config
    if candidates is None:
        candidates = catalog_candidates(snapshot, auto.category)
    budgets = rung_budgets(config, snapshot.spend_usd, now)
    by_id = snapshot.connections_by_id
    models_by_key = snapshot.models_by_key

    pair_cache: dict[PairKey, PairVerdict] = {}
    placed: list[tuple[int, int, PoolEntry]] = []
    excluded: list[Exclusion] = []
    refresh: dict[str, None] = {}
    retry_at: datetime | None = None
    judged = 0

    for index, candidate in enumerate(candidates):
        if candidate.connection_id is not None:
            ids: Sequence[str] = (candidate.connection_id,)
        else:
            ids = candidate.allowed_connection_ids
        model_entry = models_by_key.get((candidate.provider, candidate.model))
        # L3 per pair: the connection's billing picks rung 0 or 1, else the candidate's tier decides.
        tier_rung = rung_for("metered", model_entry, config)
        survivors: dict[Rung, list[str]] = {}
        seen: set[str] = set()
        for connection_id in ids:
            if connection_id in seen:
                continue
            seen.add(connection_id)
            judged += 1
            connection = by_id.get(connection_id)
            if connection is None:
                excluded.append(
                    Exclusion(
                        candidate.provider,
                        candidate.model,
                        connection_id,
                        None,
                        Reason.UNKNOWN_CONNECTION,
                        f"the ladder knows no connection {connection_id!r}",
                    )
                )
                continue
            verdict, scopes = _connection_facts(snapshot, connection)
            billing = verdict.billing
            if billing == "subscription":
                rung = Rung.SUBSCRIPTION
            elif billing == "keyless":
                rung = Rung.KEYLESS
            else:
                rung = tier_rung
            # A pair's verdict depends on the model only through its rung and the scoped windows
            # that apply to it: judge each distinct case once.
            key: PairKey = (connection_id, rung)
            if scopes:
                key = (connection_id, rung, scope_mask(scopes, candidate.model))
            pair = pair_cache.get(key)
            if pair is None:
                pair = judge_pair(
                    grouping=grouping,
                    connection=connection,
                    verdict=verdict,
                    model=candidate.model,
                    model_entry=model_entry,
                    budgets=budgets,
                    config=config,
                    now=now,
                    rung=rung,
                )
                pair_cache[key] = pair
            if pair.refresh:
                refresh[connection_id] = None
            if pair.reason is None:
                survivors.setdefault(pair.rung, []).append(connection_id)
                continue
            excluded.append(
                Exclusion(
                    candidate.provider, candidate.model, connection_id, pair.rung, pair.reason, pair.detail
                )
            )
            if pair.retry_at is not None and (retry_at is None or pair.retry_at < retry_at):
                retry_at = pair.retry_at
        for rung, allowed in survivors.items():
            placed.append(
                (
                    int(rung),
                    index,
                    PoolEntry(
                        candidate.provider, candidate.model, rung, candidate.connection_id, tuple(allowed)
                    ),
                )
            )

    placed.sort(key=lambda item: (item[0], item[1]))
    pool = tuple(entry for _, _, entry in placed)
    empty = None if pool else _empty(model, grouping, judged, retry_at)
    return Resolution(
        model=model,
        grouping=grouping,
        category=auto.category,
        resolved_at=now,
        pool=pool,
        excluded=tuple(excluded),
        empty=empty,
        refresh=tuple(refresh),
    )


def _empty(model: str, grouping: Grouping, judged: int, retry_at: datetime | None) -> Empty:
    if judged == 0:
        return Empty(
            "no_candidates",
            f"{model}: no (candidate, connection) pair to judge: no catalog model of this category, "
            "or no connection serves one",
            None,
        )
    when = f"; quota expected back at {format_utc(retry_at)}" if retry_at else ""
    if grouping == "subscription":
        return Empty(
            "no_verified_subscription_quota",
            f"{model}: no plan connection with fresh, verified, hard-stop quota left{when}",
            retry_at,
        )
    return Empty(
        "all_rungs_exhausted", f"{model}: every rung is exhausted, disabled or cooling down{when}", retry_at
    )
