"""L9–L12 and L14: resolve an auto id into an ordered, explained pool.

The resolution is recomputed from the snapshot at every call (L12): nothing here remembers a rung.
What a call may reuse of earlier resolutions of the same snapshot (each connection's facts, each
pair's verdict and each candidate's outcome, while they hold) is kept by ladder.domain.memo.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from ladder.domain.autoid import AutoId, parse_auto_id
from ladder.domain.billing import BillingVerdict
from ladder.domain.budgets import RungBudget, budget_block, rung_budgets
from ladder.domain.memo import (
    CandidateOutcome,
    Facts,
    PairKey,
    PairVerdict,
    VerdictMemo,
    facts_table,
    verdict_memo,
)
from ladder.domain.tiers import rung_for
from ladder.domain.timefmt import format_utc
from ladder.domain.types import (
    Candidate,
    Connection,
    Empty,
    Exclusion,
    Grouping,
    ModelEntry,
    PoolEntry,
    Reason,
    Resolution,
    Rung,
    Snapshot,
    Thresholds,
    Window,
)
from ladder.domain.windows import (
    applicable_windows,
    blocking_reason,
    blocks_as_evidence,
    is_too_old,
    is_usable,
    reset_passed,
    scope_matches,
)

PLAN_READING_RUNGS = (Rung.SUBSCRIPTION, Rung.FREE)


def billing_verdict(snapshot: Snapshot, connection: Connection) -> BillingVerdict:
    return facts_table(snapshot)[connection.id][1]


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


def _window_detail(window: Window, reason: str, limits: Thresholds) -> str:
    at = f"window {window.name} at {window.remaining_pct:.1f}%"
    if reason == Reason.QUOTA_EXHAUSTED:
        return f"{at} ≤ cutoff {_pct(limits.exit_cutoff_pct)}"
    if reason == Reason.RESERVE_REACHED:
        return f"{at} ≤ reserve {_pct(limits.reserve_pct or 0.0)} kept for the operator's own use"
    floor = _pct(limits.floor_pct)
    return f"window {window.name} latched at {window.remaining_pct:.1f}% ≤ re-entry floor {floor}"


# L6: a pair reports the first of these that any of its blocking windows has.
_REASON_ORDER = (Reason.QUOTA_EXHAUSTED, Reason.RESERVE_REACHED, Reason.BELOW_REENTRY_FLOOR)


def _blocked(blocking: list[Window], limits: Thresholds) -> tuple[str, str, datetime | None]:
    """Reason, detail and the moment all blocking windows have reset (None if one has no reset)."""
    reasons = [blocking_reason(w, limits) for w in blocking]
    reason = min(reasons, key=_REASON_ORDER.index)
    shown = blocking[reasons.index(reason)]
    resets = [w.reset_at for w in blocking]
    retry_at = None if any(r is None for r in resets) else max(r for r in resets if r is not None)
    return reason, _window_detail(shown, reason, limits), retry_at


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


def _disabled(connection: Connection, rung: Rung) -> PairVerdict:
    reason = connection.disabled_reason
    return PairVerdict(rung, Reason.DISABLED, f"disabled ({reason})" if reason else "disabled", None, False)


def _cooling(cooldown_until: datetime, rung: Rung, can_qualify: bool) -> PairVerdict:
    detail = f"cooling down until {format_utc(cooldown_until)}"
    return PairVerdict(rung, Reason.COOLING_DOWN, detail, cooldown_until if can_qualify else None, False)


def _future(moment: datetime | None, now: datetime) -> datetime | None:
    return moment if moment is not None and moment > now else None


def _freshness(
    connection: Connection, model: str, limits: Thresholds, now: datetime
) -> tuple[tuple[Window, ...], bool]:
    """L4/L5: the reading's windows that apply to the model, and whether the reading needs a refresh
    (missing, older than the age limit, or describing a period that has ended)."""
    reading = connection.reading
    if reading is None:
        return (), True
    windows = applicable_windows(reading, model)
    if (now - reading.fetched_at).total_seconds() > limits.age_limit_s:
        return windows, True
    for window in windows:
        if window.reset_at is not None and window.reset_at <= now:
            return windows, True
    return windows, False


# The verdicts of pairs that pass, one per (rung, refresh): most pairs pass, and share them.
_PASSING = {
    (rung, refresh): PairVerdict(rung, None, "", None, refresh) for rung in Rung for refresh in (False, True)
}


def _judge_thrifty(
    connection: Connection,
    rung: Rung,
    model: str,
    budget: RungBudget | None,
    limits: Thresholds,
    now: datetime,
) -> PairVerdict:
    """L10: disabled and cooling-down connections are out; rungs 3–4 answer to their budget (L8);
    rungs 0 and 2 only to a verified reading's evidence; rung 1 to nothing else."""
    if not connection.enabled:
        return _disabled(connection, rung)
    cooldown_until = connection.cooldown_until
    if cooldown_until is not None and cooldown_until > now:
        return _cooling(cooldown_until, rung, not (budget is not None and budget.disabled))
    if budget is not None:
        block = budget_block(budget)
        if block is None:
            return _PASSING[(rung, False)]
        reason, detail = block
        retry_at = budget.period_ends_at if reason == Reason.BUDGET_EXHAUSTED else None
        return PairVerdict(rung, reason, detail, _future(retry_at, now), False)
    if rung not in PLAN_READING_RUNGS or connection.keyless:
        return _PASSING[(rung, False)]
    windows, stale = _freshness(connection, model, limits, now)
    reading = connection.reading
    if reading is not None and reading.verifiable:
        evidence = [w for w in windows if blocks_as_evidence(w, not stale, now, limits)]
        if evidence:
            reason, detail, retry_at = _blocked(evidence, limits)
            return PairVerdict(rung, reason, detail, _future(retry_at, now), stale)
    return _PASSING[(rung, stale)]


def _judge_subscription(
    connection: Connection,
    verdict: BillingVerdict,
    rung: Rung,
    model: str,
    limits: Thresholds,
    now: datetime,
) -> PairVerdict:
    """L9: an enabled plan connection that cannot bill past its quota, not cooling down, with a fresh
    verified reading whose every applicable window is usable."""
    billing_failure = _billing_failure(connection, verdict)
    if not connection.enabled:
        return _disabled(connection, rung)
    cooldown_until = connection.cooldown_until
    if cooldown_until is not None and cooldown_until > now:
        return _cooling(cooldown_until, rung, billing_failure is None)
    if billing_failure is not None:
        reason, detail = billing_failure
        return PairVerdict(rung, reason, detail, None, False)
    windows, stale = _freshness(connection, model, limits, now)
    plan_reason, plan_detail, retry_at = _judge_plan_reading(connection, windows, limits, now)
    if plan_reason is None:
        return _PASSING[(rung, stale)]
    return PairVerdict(rung, plan_reason, plan_detail, _future(retry_at, now), stale)


def _judge_plan_reading(
    connection: Connection, windows: tuple[Window, ...], limits: Thresholds, now: datetime
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
            assert window.reset_at is not None  # noqa: S101  (narrows the type: reset_passed needs a reset)
            return (
                Reason.WINDOW_RESET_PASSED,
                f"window {window.name} reset at {format_utc(window.reset_at)}: reading is of a past period",
                None,
            )
    if is_too_old(reading, now, limits):
        age = (now - reading.fetched_at).total_seconds()
        return Reason.READING_STALE, f"reading is {age:.0f}s old > {limits.age_limit_s:g}s", None
    blocking = [w for w in windows if not is_usable(w, limits)]
    if blocking:
        return _blocked(blocking, limits)
    return None, "", None


def _catalog_candidates_memo(snapshot: Snapshot, category: str | None) -> tuple[Candidate, ...]:
    key = ("candidates", category)
    candidates: tuple[Candidate, ...] | None = snapshot.memo.get(key)
    if candidates is None:
        candidates = snapshot.memo[key] = tuple(catalog_candidates(snapshot, category))
    return candidates


def _unknown(connection_id: str) -> PairVerdict:
    return PairVerdict(
        None, Reason.UNKNOWN_CONNECTION, f"the ladder knows no connection {connection_id!r}", None, False
    )


def _judge_case(
    snapshot: Snapshot,
    memo: VerdictMemo,
    grouping: Grouping,
    facts: Facts | None,
    connection_id: str,
    model: str,
    tier_rung: Rung,
    budgets: dict[Rung, RungBudget],
    now: datetime,
) -> tuple[PairVerdict, bool]:
    """A pair's verdict, judged once per distinct case; and whether it may be kept until memo.until."""
    if facts is None:
        return _unknown(connection_id), True
    connection, verdict, billing_rung, scopes, limits = facts
    # L3 per pair: the connection's billing picks rung 0 or 1, else the candidate's tier decides.
    rung = tier_rung if billing_rung is None else billing_rung
    # A pair's verdict depends on the model only through its rung and the scoped windows that apply
    # to it: judge each distinct case once.
    key: PairKey = (connection_id, rung, scope_mask(scopes, model)) if scopes else (connection_id, rung)
    pair = memo.by_case.get(key)
    if pair is not None:
        return pair, True
    if grouping == "subscription":
        pair = _judge_subscription(connection, verdict, rung, model, limits, now)
    else:
        pair = _judge_thrifty(connection, rung, model, budgets.get(rung), limits, now)
    if pair.reason == Reason.READING_STALE:
        return pair, False  # its detail tells the reading's age: true at this moment only
    if memo.stored < memo.capacity:
        memo.by_case[key] = pair
        memo.stored += 1
    return pair, True


def _judge_candidate(
    snapshot: Snapshot,
    memo: VerdictMemo,
    grouping: Grouping,
    candidate: Candidate,
    dedupe: bool,
    facts: dict[str, Facts],
    models_by_key: dict[tuple[str, str], ModelEntry],
    budgets: dict[Rung, RungBudget],
    now: datetime,
) -> tuple[CandidateOutcome, bool]:
    """One candidate's pairs judged (each verdict from the memo when it holds one); and whether every
    verdict may be kept until memo.until, so that the outcome may be too."""
    if candidate.connection_id is not None:
        ids: Sequence[str] = (candidate.connection_id,)
    else:
        # A connection id repeated in one candidate's list is judged once, at its first place.
        ids = candidate.allowed_connection_ids
        if dedupe and len(ids) > 1:
            ids = tuple(dict.fromkeys(ids))
    if not ids:
        return CandidateOutcome((), (), (), None, 0), True
    config = snapshot.config
    by_model = memo.by_model
    model_entry = models_by_key.get((candidate.provider, candidate.model))
    tier_rung = rung_for("metered", model_entry, config)
    verdicts = by_model.get((candidate.model, tier_rung))
    if verdicts is None:
        verdicts = {}
        if memo.stored < memo.capacity:
            by_model[(candidate.model, tier_rung)] = verdicts
    survivors: dict[Rung, list[str]] = {}
    excluded: list[Exclusion] = []
    refresh: dict[str, None] = {}
    retry_at: datetime | None = None
    kept = True
    for connection_id in ids:
        pair = verdicts.get(connection_id)
        if pair is None:
            pair, keep = _judge_case(
                snapshot,
                memo,
                grouping,
                facts.get(connection_id),
                connection_id,
                candidate.model,
                tier_rung,
                budgets,
                now,
            )
            if not keep:
                kept = False
            elif memo.stored < memo.capacity:
                memo.stored += 1
                verdicts[connection_id] = pair
        if pair.refresh:
            refresh[connection_id] = None
        if pair.reason is None:
            assert pair.rung is not None  # noqa: S101  (narrows the type: a pair with no reason has its rung)
            allowed = survivors.get(pair.rung)
            if allowed is None:
                survivors[pair.rung] = [connection_id]
            else:
                allowed.append(connection_id)
            continue
        excluded.append(
            Exclusion(candidate.provider, candidate.model, connection_id, pair.rung, pair.reason, pair.detail)
        )
        if pair.retry_at is not None and (retry_at is None or pair.retry_at < retry_at):
            retry_at = pair.retry_at
    entries = tuple(
        PoolEntry(candidate.provider, candidate.model, rung, candidate.connection_id, tuple(allowed))
        for rung, allowed in survivors.items()
    )
    return CandidateOutcome(entries, tuple(excluded), tuple(refresh), retry_at, len(ids)), kept


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
    # Candidates built from the catalog name each connection once; the gateway's may repeat one.
    dedupe = candidates is not None
    if candidates is None:
        candidates = _catalog_candidates_memo(snapshot, auto.category)
    budgets = rung_budgets(config, snapshot.spend_usd, now)
    memo = verdict_memo(snapshot, grouping, now, budgets)
    facts = facts_table(snapshot)
    models_by_key = snapshot.models_by_key

    placed: list[tuple[int, int, PoolEntry]] = []
    excluded: list[Exclusion] = []
    refresh: dict[str, None] = {}
    retry_at: datetime | None = None
    judged = 0
    by_candidate = memo.by_candidate

    for index, candidate in enumerate(candidates):
        try:
            outcome = by_candidate.get(candidate)
            hashable = True
        except TypeError:  # a candidate built with a list of ids: judged, not remembered
            outcome, hashable = None, False
        if outcome is None:
            outcome, keep = _judge_candidate(
                snapshot, memo, grouping, candidate, dedupe, facts, models_by_key, budgets, now
            )
            if keep and hashable and memo.stored < memo.capacity:
                memo.stored += 1
                by_candidate[candidate] = outcome
        judged += outcome.judged
        for entry in outcome.entries:
            placed.append((int(entry.rung), index, entry))
        excluded.extend(outcome.excluded)
        for connection_id in outcome.refresh:
            refresh[connection_id] = None
        if outcome.retry_at is not None and (retry_at is None or outcome.retry_at < retry_at):
            retry_at = outcome.retry_at

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
