"""Properties of the resolver over random states, checked against an oracle written from the rules.

HYPOTHESIS_PROFILE=nightly (make soak) runs 10 000 examples per property; the default is 300.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

import msgspec
from hypothesis import assume, given, settings
from hypothesis import strategies as st

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
    parse_auto_id,
    period_bounds,
    resolution_to_dict,
    resolve,
)
from ladder.domain.types import CATEGORIES
from ladder.domain.windows import applicable_windows, is_usable, limits_for, next_latch
from tests.conftest import examples
from tests.domain.builders import NOW

# The profiles are registered in tests/conftest.py (one mechanism for every property test).
PROFILE = settings(max_examples=examples(300))

PROVIDERS = ("p0", "p1", "p2")
MODEL_IDS = ("m0", "m1", "Opus-X", "z:free")
CONNECTION_IDS = tuple(f"c{i}" for i in range(6))
# Plain ids weigh more: a category with no model in the catalog only ever says no_candidates.
AUTO_IDS = ["auto/subscription", "auto/thrifty"] * 6 + [
    f"auto/{c}:{t}" for c in CATEGORIES for t in ("subscription", "thrifty")
]
OFFSETS_S = (None, None, -86400, -60, 0, 60, 3600, 3600, 86400, 86400)
# L5 poll intervals and L6 reserves: mostly none; values that straddle the ages and percentages drawn.
POLL_INTERVALS = st.sampled_from([None] * 6 + [1.0, 20.0, 300.0, 1020.0])
RESERVES = st.sampled_from([None] * 5 + [0.0, 1.0, 2.0, 3.0, 10.0, 20.0, 50.0, 100.0])


def _moment(offset: int | None) -> datetime | None:
    return None if offset is None else NOW + timedelta(seconds=offset)


# --- strategies --------------------------------------------------------------------------------------------

windows = st.builds(
    Window,
    name=st.sampled_from(["5h", "7d", "7d-opus"]),
    remaining_pct=st.sampled_from([0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 5.5, 10.0, 10.5, 20.0, 50.0, 100.0]),
    reset_at=st.sampled_from(OFFSETS_S).map(_moment),
    scope_models=st.sampled_from([(), (), (), (), ("*opus*",), ("M0",), ("*:FREE",), ("m1", "*opus*")]),
    latched=st.booleans(),
)

readings = st.builds(
    Reading,
    fetched_at=st.sampled_from([-400, -30, 0, 1, 1, 1, 60, 60, 179, 180, 181, 1200]).map(
        lambda age: NOW - timedelta(seconds=age)
    ),
    windows=st.lists(windows, min_size=1, max_size=3).map(tuple) | st.just(()),
    verifiable=st.sampled_from([True, True, True, False]),
    observed_overage=st.sampled_from([None, None, None, None, "meters-to-paid", "hard-stop"]),
)


@st.composite
def connections(draw: st.DrawFn) -> tuple[Connection, ...]:
    ids = draw(st.lists(st.sampled_from(CONNECTION_IDS), unique=True, min_size=1, max_size=5))
    return tuple(
        Connection(
            id=cid,
            provider=draw(st.sampled_from(PROVIDERS + ("p0", "p1"))),
            auth_type=draw(st.sampled_from([None, "oauth", "oauth", " OAuth", "APIKEY", "cookie", ""])),
            keyless=draw(st.sampled_from([False, False, False, True])),
            enabled=draw(st.sampled_from([True] * 7 + [False])),
            cooldown_until=draw(st.sampled_from([None] * 12 + [-60, 0, 90, 7200]).map(_moment)),
            overage_override=draw(st.sampled_from([None] * 5 + ["hard-stop", "meters-to-paid", "unknown"])),
            models=draw(st.one_of(st.none(), st.lists(st.sampled_from(MODEL_IDS), unique=True).map(tuple))),
            reading=draw(st.none() | readings | readings),
            poll_interval_s=draw(POLL_INTERVALS),
            reserve_pct=draw(RESERVES),
        )
        for cid in ids
    )


# Mostly a curated base, so that deep paths (verified plans, evidence) are reached often.
BASE_CATALOG = (
    CatalogEntry("p0", None, "subscription", "hard-stop"),
    CatalogEntry("p1", "oauth", "subscription", "hard-stop"),
    CatalogEntry("p1", "apikey", "metered", "meters-to-paid"),
)


@st.composite
def catalogs(draw: st.DrawFn) -> tuple[CatalogEntry, ...]:
    # catalog auth types arrive normalised (the state file and the admin normalise them)
    base = draw(st.sampled_from([(), BASE_CATALOG, BASE_CATALOG, BASE_CATALOG]))
    taken = {(e.provider, e.auth_type) for e in base}
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(PROVIDERS), st.sampled_from([None, "oauth", "apikey"])), unique=True
        )
    )
    keys = [k for k in keys if k not in taken]
    return base + tuple(
        CatalogEntry(
            provider,
            auth,
            draw(st.sampled_from(["subscription", "subscription", "metered", "unknown"])),
            draw(st.sampled_from(["hard-stop", "hard-stop", "meters-to-paid", "unknown"])),
        )
        for provider, auth in keys
    )


@st.composite
def model_catalogs(draw: st.DrawFn) -> tuple[ModelEntry, ...]:
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(PROVIDERS), st.sampled_from(MODEL_IDS)),
            unique=True,
            min_size=1,
            max_size=6,
        )
    )
    return tuple(
        ModelEntry(
            provider,
            model,
            input_usd_per_mtok=draw(st.sampled_from([None, 0.0, 0.1, 0.2, 0.5, 1.0, 3.0])),
            free=draw(st.sampled_from([False, False, True])),
            categories=tuple(draw(st.lists(st.sampled_from(["coding", "chat", "vision"]), unique=True))),
        )
        for provider, model in keys
    )


configs = st.builds(
    LadderConfig,
    exit_cutoff_pct=st.sampled_from([0.0, 2.0, 5.0, 10.0]),
    reentry_min_remaining_pct=st.sampled_from([0.0, 3.0, 5.0, 20.0]),
    max_reading_age_s=st.sampled_from([60.0, 180.0]),
    rung_budget_usd=st.dictionaries(st.sampled_from(["cheap", "premium"]), st.sampled_from([0.0, 1.0, 5.0])),
    budget_period=st.sampled_from(["day", "month"]),
    free_max_input_usd_per_mtok=st.sampled_from([0.0, 0.2]),
    cheap_max_input_usd_per_mtok=st.sampled_from([1.0, 0.5]),
)


def candidate_lists(
    ids: Sequence[str], models: Sequence[ModelEntry]
) -> st.SearchStrategy[list[Candidate] | None]:
    """Gateway candidates over the state's own connections (plus an unknown one) and mostly catalog models."""
    known = tuple(ids) or ("ghost",)
    some_id = st.sampled_from(known + known + ("ghost",))
    pairs = [(m.provider, m.model) for m in models] or [("p0", "m0")]
    where = st.sampled_from(pairs + pairs + [("px", "unlisted"), ("p0", "unlisted")])
    logical = st.builds(
        lambda pm, allowed: Candidate(pm[0], pm[1], None, tuple(allowed)),
        where,
        st.lists(some_id, min_size=1, max_size=6) | st.just([]),
    )
    concrete = st.builds(
        lambda pm, cid, extra: Candidate(pm[0], pm[1], cid, tuple(extra)),
        where,
        some_id,
        st.lists(some_id, max_size=2),
    )
    listed = st.lists(
        logical | logical | concrete,
        min_size=1,
        max_size=5,
        unique_by=lambda c: (c.provider, c.model, c.connection_id),
    )
    kinds: dict[str, st.SearchStrategy[list[Candidate] | None]] = {"none": st.none(), "empty": st.just([])}
    return st.sampled_from(["none", "empty"] + ["listed"] * 8).flatmap(lambda kind: kinds.get(kind, listed))


@dataclass(frozen=True)
class Case:
    snapshot: Snapshot
    model: str
    candidates: list[Candidate] | None

    def snapshot_copy(self) -> Snapshot:
        s = self.snapshot
        return Snapshot(s.config, s.billing_catalog, s.models, s.connections, dict(s.spend_usd))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    catalog = draw(model_catalogs())
    conns = draw(connections())
    snapshot = Snapshot(
        config=draw(configs),
        billing_catalog=draw(catalogs()),
        models=catalog,
        connections=conns,
        spend_usd=draw(
            st.dictionaries(st.sampled_from(["cheap", "premium"]), st.sampled_from([0.0, 1.0, 5.0, 9.0]))
        ),
    )
    candidates = draw(candidate_lists([c.id for c in conns], catalog))
    return Case(snapshot, draw(st.sampled_from(AUTO_IDS)), candidates)


def rarely(value: Any, usual: Any) -> st.SearchStrategy[Any]:
    """`usual` nine times in ten, else `value`."""
    return st.sampled_from([usual] * 9 + [value])


plan_windows = st.builds(
    Window,
    name=st.sampled_from(["5h", "7d", "7d-opus"]),
    remaining_pct=st.sampled_from([0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 5.5, 10.0, 10.5, 20.0, 50.0, 100.0]),
    reset_at=st.sampled_from([None, None, -60, 0, 60, 60, 3600, 3600, 86400, 86400]).map(_moment),
    scope_models=st.sampled_from([(), (), (), ("*opus*",), ("M0",)]),
    latched=st.booleans(),
)

plan_readings = st.builds(
    Reading,
    fetched_at=st.sampled_from([-30, 0, 1, 30, 59, 60, 61, 179, 180, 181, 1200]).map(
        lambda age: NOW - timedelta(seconds=age)
    ),
    windows=st.lists(plan_windows, min_size=1, max_size=3).map(tuple),
    verifiable=rarely(False, True),
    observed_overage=st.sampled_from([None] * 8 + ["meters-to-paid", "hard-stop"]),
)


@st.composite
def plan_cases(draw: st.DrawFn) -> Case:
    """Mostly curated plan connections with live readings: the quota rules (L5, L6, L9, L10) get exercised."""
    ids = draw(st.lists(st.sampled_from(CONNECTION_IDS), unique=True, min_size=1, max_size=4))
    conns = tuple(
        Connection(
            id=cid,
            provider=draw(st.sampled_from(["p0", "p0", "p0", "p1"])),
            auth_type=draw(rarely("apikey", "oauth")),
            keyless=draw(rarely(True, False)),
            enabled=draw(rarely(False, True)),
            cooldown_until=draw(st.sampled_from([None] * 9 + [90]).map(_moment)),
            overage_override=draw(rarely("meters-to-paid", None)),
            reading=None if draw(rarely(True, False)) else draw(plan_readings),
            poll_interval_s=draw(POLL_INTERVALS),
            reserve_pct=draw(RESERVES),
        )
        for cid in ids
    )
    models = (
        ModelEntry("p0", "m0", 3.0, categories=("coding",)),
        ModelEntry("p0", "Opus-X", 15.0, categories=("coding",)),
        ModelEntry("p1", "m1", 0.0, free=True),
        ModelEntry("p1", "m0", 0.5),
    )
    snapshot = Snapshot(
        config=draw(configs),
        billing_catalog=BASE_CATALOG,
        models=models,
        connections=conns,
        spend_usd={},
    )
    candidates = draw(candidate_lists(ids, models))
    return Case(
        snapshot,
        draw(st.sampled_from(["auto/subscription", "auto/thrifty", "auto/coding:thrifty"])),
        candidates,
    )


# --- the oracle: the rules of DESIGN L1–L14 and STATE.md, written out plainly ------------------------------


def norm(auth: str | None) -> str | None:
    return None if auth is None else (auth.strip().lower() or None)


def billing_of(c: Connection, catalog: Sequence[CatalogEntry]) -> tuple[str, str, bool]:
    if c.keyless:
        return "keyless", "hard-stop", True
    rows = {(e.provider, norm(e.auth_type)): e for e in catalog}
    row = rows.get((c.provider, norm(c.auth_type))) if norm(c.auth_type) is not None else None
    row = row or rows.get((c.provider, None))
    if c.reading is not None and c.reading.observed_overage == "meters-to-paid":
        overage = "meters-to-paid"
    elif c.overage_override is not None:
        overage = c.overage_override
    elif row is not None:
        overage = row.overage
    else:
        overage = "unknown"
    return (row.billing if row else "unknown"), overage, row is not None


def rung_of(billing: str, entry: ModelEntry | None, cfg: LadderConfig) -> int:
    if billing == "subscription":
        return 0
    if billing == "keyless":
        return 1
    if entry is not None and entry.free:
        return 2
    price = None if entry is None else entry.input_usd_per_mtok
    if price is None:
        return 4
    if price <= cfg.free_max_input_usd_per_mtok:
        return 2
    return 3 if price <= cfg.cheap_max_input_usd_per_mtok else 4


def applies(w: Window, model: str) -> bool:
    return not w.scope_models or any(fnmatchcase(model.lower(), g.lower()) for g in w.scope_models)


def cutoff_of(c: Connection, cfg: LadderConfig) -> float:
    """L6 Reserve: max(exit_cutoff_pct, reserve_pct)."""
    return cfg.exit_cutoff_pct if c.reserve_pct is None else max(cfg.exit_cutoff_pct, c.reserve_pct)


def floor_of(c: Connection, cfg: LadderConfig) -> float:
    """L6 Reserve: reentry_floor + (cutoff − exit_cutoff_pct)."""
    reentry_floor = max(cfg.reentry_min_remaining_pct, cfg.exit_cutoff_pct)
    return reentry_floor + (cutoff_of(c, cfg) - cfg.exit_cutoff_pct)


def age_limit_of(c: Connection, cfg: LadderConfig) -> float:
    """L5: max_reading_age_s plus poll_interval_s whenever that is set."""
    return cfg.max_reading_age_s + (c.poll_interval_s or 0.0)


def usable(w: Window, c: Connection, cfg: LadderConfig) -> bool:
    return w.remaining_pct > (floor_of(c, cfg) if w.latched else cutoff_of(c, cfg))


def window_reason(w: Window, c: Connection, cfg: LadderConfig) -> str:
    if w.remaining_pct <= cfg.exit_cutoff_pct:
        return "quota_exhausted"
    if c.reserve_pct is not None and w.remaining_pct <= c.reserve_pct:
        return "reserve_reached"
    return "below_reentry_floor"


def blocked(ws: list[Window], c: Connection, cfg: LadderConfig) -> tuple[str, datetime | None]:
    reasons = {window_reason(w, c, cfg) for w in ws}
    reason = next(r for r in ("quota_exhausted", "reserve_reached", "below_reentry_floor") if r in reasons)
    resets = [w.reset_at for w in ws]
    return reason, (None if None in resets else max(r for r in resets if r is not None))


@dataclass(frozen=True)
class Verdict:
    rung: int
    reason: str | None
    retry_at: datetime | None
    refresh: bool


def judge(
    grouping: str, c: Connection, model: str, entry: ModelEntry | None, s: Snapshot, now: datetime
) -> Verdict:
    cfg = s.config
    billing, overage, curated = billing_of(c, s.billing_catalog)
    rung = rung_of(billing, entry, cfg)
    r = c.reading
    ws = [w for w in r.windows if applies(w, model)] if r is not None else []
    cooling = c.cooldown_until is not None and c.cooldown_until > now
    age = None if r is None else max(0.0, (now - r.fetched_at).total_seconds())
    passed = [w for w in ws if w.reset_at is not None and w.reset_at <= now]
    wants_refresh = r is None or (age is not None and age > age_limit_of(c, cfg)) or bool(passed)
    reason: str | None = None
    retry_at: datetime | None = None
    if grouping == "subscription":
        billing_ok = not c.keyless and curated and billing == "subscription" and overage == "hard-stop"
        refresh = rung == 0 and billing_ok and c.enabled and not cooling and wants_refresh
        if not c.enabled:
            reason = "disabled"
        elif cooling:
            reason, retry_at = "cooling_down", (c.cooldown_until if billing_ok else None)
        elif c.keyless:
            reason = "keyless_not_plan"
        elif not curated:
            reason = "uncurated_provider"
        elif billing != "subscription":
            reason = "not_plan_billing"
        elif overage != "hard-stop":
            reason = "overage_not_hard_stop"
        elif r is None:
            reason = "no_reading"
        elif not r.verifiable or not ws:
            reason = "reading_unverifiable"
        elif passed:
            reason = "window_reset_passed"
        elif age is not None and age > age_limit_of(c, cfg):
            reason = "reading_stale"
        else:
            blocking = [w for w in ws if not usable(w, c, cfg)]
            if blocking:
                reason, retry_at = blocked(blocking, c, cfg)
        return Verdict(rung, reason, retry_at, refresh)
    refresh = rung in (0, 2) and not c.keyless and c.enabled and not cooling and wants_refresh
    name = {3: "cheap", 4: "premium"}.get(rung)
    budget = None if name is None else cfg.rung_budget_usd.get(name)
    rung_disabled = budget is not None and budget == 0
    if not c.enabled:
        reason = "disabled"
    elif cooling:
        reason, retry_at = "cooling_down", (None if rung_disabled else c.cooldown_until)
    elif rung_disabled:
        reason = "rung_disabled"
    elif budget is not None and name is not None and s.spend_usd.get(name, 0.0) >= budget:
        reason, retry_at = "budget_exhausted", period_bounds(now, cfg.budget_period)[1]
    elif rung in (0, 2) and r is not None and r.verifiable:
        fresh = age is not None and age <= age_limit_of(c, cfg) and not passed
        evidence = [
            w
            for w in ws
            if not usable(w, c, cfg) and (fresh or (w.reset_at is not None and w.reset_at > now))
        ]
        if evidence:
            reason, retry_at = blocked(evidence, c, cfg)
    return Verdict(rung, reason, retry_at, refresh)


def expand(case: Case) -> list[Candidate]:
    s = case.snapshot
    if case.candidates is not None:
        return case.candidates
    category = parse_auto_id(case.model).category
    return [
        Candidate(
            m.provider,
            m.model,
            None,
            tuple(
                c.id
                for c in s.connections
                if c.provider == m.provider and (c.models is None or m.model in c.models)
            ),
        )
        for m in s.models
        if category is None or category in m.categories
    ]


def judged_ids(c: Candidate) -> list[str]:
    ids = [c.connection_id] if c.connection_id is not None else list(c.allowed_connection_ids)
    return list(dict.fromkeys(ids))


def oracle(case: Case) -> dict[str, Any]:
    s = case.snapshot
    grouping = parse_auto_id(case.model).grouping
    by_id = {c.id: c for c in s.connections}
    models = {(m.provider, m.model): m for m in s.models}
    placed: list[tuple[int, int, dict[str, Any]]] = []
    excluded: list[list[Any]] = []
    refresh: list[str] = []
    retries: list[datetime] = []
    judged = 0
    for index, cand in enumerate(expand(case)):
        survivors: dict[int, list[str]] = {}
        for cid in judged_ids(cand):
            judged += 1
            conn = by_id.get(cid)
            if conn is None:
                excluded.append([cand.provider, cand.model, cid, None, "unknown_connection"])
                continue
            v = judge(grouping, conn, cand.model, models.get((cand.provider, cand.model)), s, NOW)
            if v.refresh and cid not in refresh:
                refresh.append(cid)
            if v.reason is None:
                survivors.setdefault(v.rung, []).append(cid)
            else:
                excluded.append([cand.provider, cand.model, cid, v.rung, v.reason])
                if v.retry_at is not None and v.retry_at > NOW:
                    retries.append(v.retry_at)
        for rung, allowed in survivors.items():
            entry = {"provider": cand.provider, "model": cand.model, "rung_index": rung}
            entry |= {"connection_id": cand.connection_id, "allowed_connection_ids": allowed}
            placed.append((rung, index, entry))
    placed.sort(key=lambda item: (item[0], item[1]))
    pool = [entry for _, _, entry in placed]
    empty = None
    if not pool:
        code = (
            "no_candidates"
            if judged == 0
            else ("no_verified_subscription_quota" if grouping == "subscription" else "all_rungs_exhausted")
        )
        empty = {"code": code, "retry_at": min(retries) if retries and judged else None}
    return {"pool": pool, "excluded": excluded, "empty": empty, "refresh": refresh}


def observed(resolution: Resolution) -> dict[str, Any]:
    empty = resolution.empty
    return {
        "pool": [
            {
                "provider": e.provider,
                "model": e.model,
                "rung_index": int(e.rung),
                "connection_id": e.connection_id,
                "allowed_connection_ids": list(e.allowed_connection_ids),
            }
            for e in resolution.pool
        ],
        "excluded": [
            [x.provider, x.model, x.connection_id, None if x.rung is None else int(x.rung), x.reason]
            for x in resolution.excluded
        ],
        "empty": None if empty is None else {"code": empty.code, "retry_at": empty.retry_at},
        "refresh": list(resolution.refresh),
    }


def resolve_case(case: Case) -> Resolution:
    return resolve(case.snapshot_copy(), case.model, case.candidates, NOW)


# --- properties --------------------------------------------------------------------------------------------


@settings(PROFILE)
@given(cases())
def test_it_agrees_with_the_written_rules(case: Case) -> None:
    assert observed(resolve_case(case)) == oracle(case)


@settings(PROFILE)
@given(plan_cases())
def test_it_agrees_with_the_written_rules_on_plan_quota(case: Case) -> None:
    assert observed(resolve_case(case)) == oracle(case)


def holds_keeps_only_verified_hard_stop_plans_in_auto_subscription(
    case: Case, resolution: Resolution
) -> None:
    if resolution.grouping != "subscription":
        return
    s = case.snapshot
    by_id = {c.id: c for c in s.connections}
    for entry in resolution.pool:
        assert entry.allowed_connection_ids, "a candidate with no surviving connection is dropped"
        for cid in entry.allowed_connection_ids:
            c = by_id[cid]
            billing, overage, curated = billing_of(c, s.billing_catalog)
            assert int(entry.rung) == 0
            assert (billing, overage, curated, c.keyless) == ("subscription", "hard-stop", True, False)
            assert c.enabled
            assert c.cooldown_until is None or c.cooldown_until <= NOW
            r = c.reading
            assert r is not None
            assert r.verifiable
            ws = [w for w in r.windows if applies(w, entry.model)]
            assert ws, "a reading with no applicable window is unverified"
            assert (NOW - r.fetched_at).total_seconds() <= age_limit_of(c, s.config)
            assert all(w.reset_at is None or w.reset_at > NOW for w in ws)
            assert all(usable(w, c, s.config) for w in ws)


def holds_rewrites_allowlists_to_an_ordered_subset_of_the_incoming_list(
    case: Case, resolution: Resolution
) -> None:
    candidates = expand(case)
    for entry in resolution.pool:
        sources = [
            c
            for c in candidates
            if (c.provider, c.model, c.connection_id) == (entry.provider, entry.model, entry.connection_id)
        ]
        assert sources
        incoming = judged_ids(sources[0])
        allowed = list(entry.allowed_connection_ids)
        assert allowed
        assert set(allowed) <= set(incoming)
        assert allowed == [cid for cid in incoming if cid in allowed]
        assert len(allowed) == len(set(allowed))
        if entry.connection_id is not None:
            assert allowed == [entry.connection_id]


def holds_never_mixes_rungs_in_a_pool_entry(case: Case, resolution: Resolution) -> None:
    s = case.snapshot
    by_id = {c.id: c for c in s.connections}
    models = {(m.provider, m.model): m for m in s.models}
    for entry in resolution.pool:
        rungs = {
            rung_of(
                billing_of(by_id[cid], s.billing_catalog)[0],
                models.get((entry.provider, entry.model)),
                s.config,
            )
            for cid in entry.allowed_connection_ids
        }
        assert rungs == {int(entry.rung)}


def holds_keeps_off_cooling_and_spent_rungs_out_of_every_pool(case: Case, resolution: Resolution) -> None:
    """L7 and L8 stated plainly: no pool entry of either grouping rides on a connection that is off or
    cooling down, nor on a cheap/premium rung whose budget is $0 or spent for the period."""
    s = case.snapshot
    by_id = {c.id: c for c in s.connections}
    for entry in resolution.pool:
        for cid in entry.allowed_connection_ids:
            assert by_id[cid].enabled
            cooldown_until = by_id[cid].cooldown_until
            assert cooldown_until is None or cooldown_until <= NOW
        budget_rung = {3: "cheap", 4: "premium"}.get(int(entry.rung))
        if budget_rung is not None:
            budget = s.config.rung_budget_usd.get(budget_rung)
            assert budget is None or (budget > 0 and s.spend_usd.get(budget_rung, 0.0) < budget)


def holds_orders_by_rung_and_keeps_incoming_order_within_a_rung(case: Case, resolution: Resolution) -> None:
    candidates = expand(case)
    index = {(c.provider, c.model, c.connection_id): i for i, c in reversed(list(enumerate(candidates)))}
    keys = [(int(e.rung), index[(e.provider, e.model, e.connection_id)]) for e in resolution.pool]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys))
    if resolution.grouping == "subscription":
        assert {k[0] for k in keys} <= {0}


def holds_places_every_pair_exactly_once_in_pool_or_excluded(case: Case, resolution: Resolution) -> None:
    expected = Counter((c.provider, c.model, cid) for c in expand(case) for cid in judged_ids(c))
    got = Counter((e.provider, e.model, cid) for e in resolution.pool for cid in e.allowed_connection_ids)
    got.update((x.provider, x.model, x.connection_id) for x in resolution.excluded)
    assert got == expected


def holds_sets_empty_iff_the_pool_is_empty(case: Case, resolution: Resolution) -> None:
    assert (resolution.empty is None) == bool(resolution.pool)
    if resolution.empty is not None and resolution.empty.retry_at is not None:
        assert resolution.empty.retry_at > NOW
    grouping_reasons = (
        {"unknown_connection", "disabled", "cooling_down", "rung_disabled", "budget_exhausted"}
        | {"quota_exhausted", "reserve_reached", "below_reentry_floor"}
        if resolution.grouping == "thrifty"
        else {
            "unknown_connection",
            "disabled",
            "cooling_down",
            "keyless_not_plan",
            "uncurated_provider",
            "not_plan_billing",
            "overage_not_hard_stop",
            "no_reading",
            "reading_unverifiable",
            "window_reset_passed",
            "reading_stale",
            "quota_exhausted",
            "reserve_reached",
            "below_reentry_floor",
        }
    )
    assert {x.reason for x in resolution.excluded} <= grouping_reasons
    assert all((x.rung is None) == (x.reason == "unknown_connection") for x in resolution.excluded)


def holds_refreshes_only_live_non_keyless_connections_once_each(case: Case, resolution: Resolution) -> None:
    by_id = {c.id: c for c in case.snapshot.connections}
    assert len(resolution.refresh) == len(set(resolution.refresh))
    for cid in resolution.refresh:
        c = by_id[cid]
        assert c.enabled
        assert not c.keyless
        assert c.cooldown_until is None or c.cooldown_until <= NOW


def holds_renders_json_and_is_deterministic(case: Case, resolution: Resolution) -> None:
    first = resolution_to_dict(resolution)
    again = resolution_to_dict(resolve(case.snapshot, case.model, case.candidates, NOW))
    third = resolution_to_dict(resolve(case.snapshot, case.model, case.candidates, NOW))
    assert json.loads(json.dumps(first)) == first
    assert first == again == third


PROPERTIES = (
    holds_keeps_only_verified_hard_stop_plans_in_auto_subscription,
    holds_rewrites_allowlists_to_an_ordered_subset_of_the_incoming_list,
    holds_never_mixes_rungs_in_a_pool_entry,
    holds_keeps_off_cooling_and_spent_rungs_out_of_every_pool,
    holds_orders_by_rung_and_keeps_incoming_order_within_a_rung,
    holds_places_every_pair_exactly_once_in_pool_or_excluded,
    holds_sets_empty_iff_the_pool_is_empty,
    holds_refreshes_only_live_non_keyless_connections_once_each,
    holds_renders_json_and_is_deterministic,
)


@settings(PROFILE)
@given(cases())
def test_it_holds_every_invariant_over_random_states(case: Case) -> None:
    """One generated state feeds every invariant: a failure's traceback names the holds_… function."""
    resolution = resolve_case(case)
    for check in PROPERTIES:
        check(case, resolution)


# --- one snapshot resolved at many clocks (its verdict memo) -----------------------------------------------

# Seconds from NOW on both sides of the states' moments: reading expiries (age vs 60/180 s, plus a
# poll interval of 1, 20, 300 or 1020 s), cooldown
# ends (-60, 0, 90, 7200), window resets (-60, 0, 60, 3600, 86400), the day's and the month's end.
CLOCK_OFFSETS_S = (
    -120, -61, -60, -1, 0, 1, 59, 60, 61, 89, 90, 91, 119, 120, 121, 178, 179, 180, 181,
    239, 240, 241, 299, 300, 301, 479, 480, 481, 1079, 1080, 1081, 1199, 1200, 1201,
    1020, 1021, 3599, 3600, 3601, 7199, 7200, 43199, 43200, 86400, 820799, 820800,
)  # fmt: skip


@settings(PROFILE)
@given(
    cases(),
    st.lists(st.sampled_from(CLOCK_OFFSETS_S), min_size=2, max_size=8),
    st.sampled_from(AUTO_IDS),
)
def test_it_answers_at_every_clock_as_a_fresh_snapshot_would(
    case: Case, offsets: list[int], other_model: str
) -> None:
    """One snapshot resolved again and again, forward and back across expiries, resets, cooldown ends
    and budget periods, answers each time exactly what a snapshot never resolved before answers."""
    shared = case.snapshot_copy()
    for offset in offsets:
        now = NOW + timedelta(seconds=offset)
        for model in (case.model, other_model):
            reused = resolve(shared, model, case.candidates, now)
            fresh = resolve(case.snapshot_copy(), model, case.candidates, now)
            assert resolution_to_dict(reused) == resolution_to_dict(fresh), (offset, model)


@settings(PROFILE)
@given(
    cases(),
    st.lists(
        st.dictionaries(
            st.sampled_from(["cheap", "premium"]), st.sampled_from([0.0, 0.5, 1.0, 4.9, 5.0, 9.0])
        ),
        min_size=2,
        max_size=6,
    ),
)
def test_it_answers_for_any_spend_as_a_fresh_snapshot_would(
    case: Case, spends: list[dict[str, float]]
) -> None:
    """Snapshots that differ only by spend share their memo (Snapshot.with_spend): each answers exactly
    what a snapshot never resolved before answers for its own spend."""
    base = case.snapshot_copy()
    for spend in spends:
        shared = base.with_spend(spend)
        reused = resolve(shared, case.model, case.candidates, NOW)
        fresh = resolve(case.snapshot_copy().with_spend(dict(spend)), case.model, case.candidates, NOW)
        assert resolution_to_dict(reused) == resolution_to_dict(fresh), spend


# --- L6 Reserve: a connection's own cutoff and band -------------------------------------------------------


def _with_reserve(snapshot: Snapshot, reserve: float | None) -> Snapshot:
    connections = tuple(msgspec.structs.replace(c, reserve_pct=reserve) for c in snapshot.connections)
    return Snapshot(snapshot.config, snapshot.billing_catalog, snapshot.models, connections, {})


@settings(PROFILE)
@given(plan_cases(), st.sampled_from([0.0, 1.0, 2.0, 3.0, 10.0, 20.0, 50.0, 99.0, 100.0]))
def test_it_never_serves_subscription_at_or_below_a_reserve(case: Case, reserve: float) -> None:
    """A connection with a reserve R never serves auto/subscription while a window that applies to the
    model is at or below max(exit_cutoff_pct, R)."""
    snapshot = _with_reserve(case.snapshot, reserve)
    resolution = resolve(snapshot, "auto/subscription", case.candidates, NOW)
    line = max(snapshot.config.exit_cutoff_pct, reserve)
    for entry in resolution.pool:
        for cid in entry.allowed_connection_ids:
            reading = snapshot.connections_by_id[cid].reading
            assert reading is not None
            for window in applicable_windows(reading, entry.model):
                assert window.remaining_pct > line, (cid, entry.model, window)


@settings(PROFILE)
@given(cases(), st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0, 10.0]))
def test_it_changes_nothing_for_a_reserve_at_or_below_the_cutoff(case: Case, reserve: float) -> None:
    """A reserve at or below exit_cutoff_pct leaves every resolution as it is without one, details too."""
    assume(reserve <= case.snapshot.config.exit_cutoff_pct)
    without = resolve(_with_reserve(case.snapshot, None), case.model, case.candidates, NOW)
    with_reserve = resolve(_with_reserve(case.snapshot, reserve), case.model, case.candidates, NOW)
    assert resolution_to_dict(with_reserve) == resolution_to_dict(without)


@settings(PROFILE)
@given(
    configs,
    st.sampled_from([0.0, 3.0, 10.0, 20.0, 50.0, 90.0]),
    st.integers(min_value=0, max_value=200).map(lambda half: half / 2),
    st.booleans(),
)
def test_it_shifts_the_whole_band_by_the_reserve(
    config: LadderConfig, reserve: float, pct: float, latched: bool
) -> None:
    """The band keeps its width: a window with a reserve behaves (latch and usability) exactly as one
    without, shifted down by cutoff − exit_cutoff_pct."""
    limits = limits_for(config, reserve_pct=reserve)
    shift = limits.cutoff_pct - config.exit_cutoff_pct
    assert limits.floor_pct - limits.cutoff_pct == config.reentry_floor_pct - config.exit_cutoff_pct
    assume(pct - shift >= 0)
    assert next_latch(latched, pct, limits) is next_latch(latched, pct - shift, config)
    assert is_usable(Window("5h", pct, latched=latched), limits) is is_usable(
        Window("5h", pct - shift, latched=latched), config
    )
