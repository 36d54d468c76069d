"""The pair-verdict memo: what resolutions of one snapshot may reuse. Speed only, no law.

Serves `make bench-api` (the gateway resolves the same snapshot at every request: 5,000 pairs in
100 candidates, judged once, then walked candidate by candidate) and, through the facts table,
`make bench-domain` (each connection's billing verdict and thresholds derived once per snapshot).
ladder.domain.resolve applies the law (DESIGN L9–L12) and keeps here only what it may reuse:

- each connection's facts (billing verdict, the rung its billing fixes, its scoped windows, its
  thresholds), derived once per snapshot;
- each (connection, rung, applicable windows) case's verdict, and each candidate's outcome, together
  with the moment they stop being valid: the next cooldown end, reading expiry, window reset or
  budget period end. Until one of those moments passes, later resolutions of the same snapshot walk
  only the candidates (a candidate with a verdict true at one moment only, a stale reading's age, is
  walked pair by pair every time).

The resolution itself is still recomputed at every call (L12): nothing here remembers a rung.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ladder.domain.billing import BillingVerdict, classify_billing
from ladder.domain.budgets import RungBudget, period_bounds
from ladder.domain.types import (
    Candidate,
    Connection,
    Exclusion,
    Grouping,
    PoolEntry,
    Rung,
    Snapshot,
    Thresholds,
)
from ladder.domain.windows import connection_limits

# Keys of Snapshot.memo (tuples: they never equal a connection id or another string key).
_FACTS = ("facts",)
_MOMENTS = ("moments",)
MEMO_MAX_VERDICTS = 250_000
# (connection id, rung) or (connection id, rung, which scoped windows apply)
PairKey = tuple[str, Rung] | tuple[str, Rung, tuple[bool, ...]]


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """How one (candidate model, connection) pair fares in one grouping at one moment."""

    rung: Rung | None  # None: a connection the ladder does not know
    reason: str | None
    detail: str
    # When this pair may qualify again, by its reported reason (None: unknown or never).
    retry_at: datetime | None
    refresh: bool


@dataclass
class VerdictMemo:
    """The verdicts of one snapshot and grouping, judged at clocks in [first, since].

    A verdict depends on the clock only through comparisons with a connection's cooldown end, its
    reading's expiry, its windows' resets and the budget period's end: the snapshot's moments. Until
    the first of those after `first`, every stored verdict still holds. That moment is looked up when
    the memo is first reused, so a snapshot resolved once (the offline resolver) never pays for it.
    A resolution whose clock is earlier than the latest one seen (concurrent requests, a replayed
    `now`) judges with a memo of its own instead."""

    first: datetime
    since: datetime
    gates: tuple[object, ...] = ()  # the budgets' state the verdicts were judged with (_budget_gates)
    until: datetime | None = None  # None: not looked up yet (see `expires`)
    expires: bool = True  # False: no moment lies ahead of `first`
    # (candidate model, tier rung) → connection id → verdict: the hot path's one lookup per pair.
    by_model: dict[tuple[str, Rung], dict[str, PairVerdict]] = field(default_factory=dict)
    # Distinct cases: the same connection judged for models with equal rung and applicable windows.
    by_case: dict[PairKey, PairVerdict] = field(default_factory=dict)
    # Candidate → what it contributes, when every verdict of its pairs is kept: a resolution of the
    # same candidates walks candidates, not pairs (make bench-api: 5,000 pairs in 100 candidates).
    by_candidate: dict[Candidate, CandidateOutcome] = field(default_factory=dict)
    # Verdicts stored so far: gateways send model names and connection ids of their own, so a memo
    # stops growing at MEMO_MAX_VERDICTS (what it holds still serves; the rest is judged each time).
    # The hot path compares `stored < capacity` where it stores.
    stored: int = 0
    capacity: int = MEMO_MAX_VERDICTS


@dataclass(frozen=True, slots=True)
class CandidateOutcome:
    """What one candidate adds to a resolution: its pool entries (one per rung, rung order of first
    survivor), exclusions, connections to refresh, earliest retry, and how many pairs it judged."""

    entries: tuple[PoolEntry, ...]
    excluded: tuple[Exclusion, ...]
    refresh: tuple[str, ...]
    retry_at: datetime | None
    judged: int


def verdict_memo(
    snapshot: Snapshot, grouping: Grouping, now: datetime, budgets: dict[Rung, RungBudget]
) -> VerdictMemo:
    """The snapshot's memo for this grouping that holds at now and for these budgets (a new one when
    it does not)."""
    key = ("verdicts", grouping)
    gates = _budget_gates(budgets) if grouping == "thrifty" else ()
    memo = snapshot.memo.get(key)
    if isinstance(memo, VerdictMemo) and memo.gates == gates:
        if now < memo.since:
            return VerdictMemo(now, now, gates, capacity=MEMO_MAX_VERDICTS)  # an earlier clock: judged apart
        if memo.until is None and memo.expires:
            memo.until = _next_moment(snapshot, memo.first)
            memo.expires = memo.until is not None
        if not memo.expires or (memo.until is not None and now < memo.until):
            memo.since = now
            return memo
    memo = VerdictMemo(now, now, gates, capacity=MEMO_MAX_VERDICTS)
    snapshot.memo[key] = memo
    return memo


def _budget_gates(budgets: dict[Rung, RungBudget]) -> tuple[object, ...]:
    """What thrifty verdicts read of the budgets: each gated rung's budget, and the spend only once it
    is exhausted (the spend of an open budget changes no verdict, so reports do not void the memo)."""
    return tuple(
        (rung, budget.budget_usd, budget.spent_usd if budget.exhausted else None)
        for rung, budget in budgets.items()
        if budget.budget_usd is not None
    )


def _next_moment(snapshot: Snapshot, after: datetime) -> datetime | None:
    """The first moment after `after` at which some verdict of the snapshot may change."""
    moments: list[datetime] | None = snapshot.memo.get(_MOMENTS)
    if moments is None:
        facts = facts_table(snapshot)
        moments = []
        for connection in snapshot.connections:
            if connection.cooldown_until is not None:
                moments.append(connection.cooldown_until)
            reading = connection.reading
            if reading is not None:
                # Each connection's own age limit (L5); is_too_old is "age > limit": a reading is still
                # fresh at exactly fetched_at + limit.
                limit_s = facts[connection.id][4].age_limit_s
                moments.append(reading.fetched_at + timedelta(seconds=limit_s, microseconds=1))
                moments.extend(w.reset_at for w in reading.windows if w.reset_at is not None)
        moments.sort()
        snapshot.memo[_MOMENTS] = moments
    index = bisect_right(moments, after)
    period_end = period_bounds(after, snapshot.config.budget_period)[1]
    return min(moments[index], period_end) if index < len(moments) else period_end


# Per connection: itself, its billing verdict, the rung its billing fixes (subscription 0, keyless 1;
# None: the candidate's economic tier decides, L3), the scopes of its model-scoped windows, and its
# thresholds (L5 age limit, L6 cutoff and floor).
Facts = tuple[Connection, BillingVerdict, Rung | None, tuple[tuple[str, ...], ...], Thresholds]


def facts_table(snapshot: Snapshot) -> dict[str, Facts]:
    """Each connection's facts, by id, derived once per snapshot."""
    table: dict[str, Facts] | None = snapshot.memo.get(_FACTS)
    if table is None:
        catalog = snapshot.catalog_by_key
        config = snapshot.config
        # The verdict depends on these alone: connections of one kind share one.
        verdicts: dict[tuple[object, ...], BillingVerdict] = {}
        table = {}
        for connection in snapshot.connections:
            reading = connection.reading
            observed = None
            scopes: tuple[tuple[str, ...], ...] = ()
            if reading is not None:
                observed = reading.observed_overage
                scopes = tuple([w.scope_models for w in reading.windows if w.scope_models])
            kind = (
                connection.keyless,
                connection.provider,
                connection.auth_type,
                connection.overage_override,
                observed,
            )
            verdict = verdicts.get(kind)
            if verdict is None:
                verdict = verdicts[kind] = classify_billing(connection, catalog)
            limits = connection_limits(connection, config)
            table[connection.id] = (connection, verdict, _BILLING_RUNGS.get(verdict.billing), scopes, limits)
        snapshot.memo[_FACTS] = table
    return table


_BILLING_RUNGS = {"subscription": Rung.SUBSCRIPTION, "keyless": Rung.KEYLESS}
