"""L9–L12, L14 and the resolution rules of STATE.md, pair by pair."""

from __future__ import annotations

import dataclasses
import importlib
from datetime import datetime

import pytest

from ladder.domain import (
    AutoIdError,
    Candidate,
    CatalogEntry,
    Connection,
    LadderConfig,
    ModelEntry,
    Reason,
    Resolution,
    Rung,
    Snapshot,
    catalog_candidates,
    resolve,
)
from tests.domain.builders import (
    NOW,
    at,
    concrete,
    earlier,
    key,
    keyless,
    later,
    logical,
    plan,
    pool_ids,
    reading,
    reasons,
    run,
    snap,
    sub,
    thrifty,
    win,
)

SUB_ONLY_REASONS = {
    Reason.KEYLESS_NOT_PLAN,
    Reason.UNCURATED_PROVIDER,
    Reason.NOT_PLAN_BILLING,
    Reason.OVERAGE_NOT_HARD_STOP,
    Reason.NO_READING,
    Reason.READING_UNVERIFIABLE,
    Reason.WINDOW_RESET_PASSED,
    Reason.READING_STALE,
}


def only_reason(resolution: Resolution) -> str | None:
    """The reason of the single judged pair, None when it made the pool."""
    if resolution.pool:
        assert not resolution.excluded
        return None
    assert len(resolution.excluded) == 1
    return resolution.excluded[0].reason


def retry(resolution: Resolution) -> datetime | None:
    assert resolution.empty is not None
    return resolution.empty.retry_at


# --- L14 reason codes under auto/subscription --------------------------------------------------------------


@pytest.mark.parametrize(
    ("connection", "provider", "reason"),
    [
        (plan(), "planned", None),
        (plan(enabled=False, disabled_reason="auth_failed"), "planned", Reason.DISABLED),
        (plan(cooldown_until=later(60)), "planned", Reason.COOLING_DOWN),
        (plan(cooldown_until=NOW), "planned", None),  # a cooldown ending now is over
        (plan(cooldown_until=earlier(60)), "planned", None),
        (keyless(), "anything", Reason.KEYLESS_NOT_PLAN),
        (
            Connection("u", "brand-new", "oauth", reading=reading(win())),
            "brand-new",
            Reason.UNCURATED_PROVIDER,
        ),
        # null auth_type matches only a provider-wide row: "planned" has none
        (Connection("n", "planned", None, reading=reading(win())), "planned", Reason.UNCURATED_PROVIDER),
        (Connection("m", "planned", "apikey", reading=reading(win())), "planned", Reason.NOT_PLAN_BILLING),
        (Connection("m", "planned", " APIKey ", reading=reading(win())), "planned", Reason.NOT_PLAN_BILLING),
        (
            Connection("q", "mystery-co", "oauth", reading=reading(win())),
            "mystery-co",
            Reason.NOT_PLAN_BILLING,
        ),
        (key("k", quota=reading(win())), "metered-co", Reason.NOT_PLAN_BILLING),
        (
            Connection("o", "overflowing", "cookie", reading=reading(win())),
            "overflowing",
            Reason.OVERAGE_NOT_HARD_STOP,
        ),
        (plan(overage_override="meters-to-paid"), "planned", Reason.OVERAGE_NOT_HARD_STOP),
        (plan(overage_override="unknown"), "planned", Reason.OVERAGE_NOT_HARD_STOP),
        (plan(quota=reading(win(), observed="meters-to-paid")), "planned", Reason.OVERAGE_NOT_HARD_STOP),
        (
            plan(overage_override="hard-stop", quota=reading(win(), observed="meters-to-paid")),
            "planned",
            Reason.OVERAGE_NOT_HARD_STOP,
        ),
        # an observed hard-stop never upgrades a connection
        (
            Connection("o", "overflowing", "oauth", reading=reading(win(), observed="hard-stop")),
            "overflowing",
            Reason.OVERAGE_NOT_HARD_STOP,
        ),
        (
            Connection("o", "overflowing", "oauth", overage_override="hard-stop", reading=reading(win())),
            "overflowing",
            None,
        ),
        (plan(quota=reading(win(), observed="hard-stop")), "planned", None),
        # provider-wide row used when no auth row
        (Connection("w", "plan-wide", "cookie", reading=reading(win())), "plan-wide", None),
        (Connection("w", "plan-wide", None, reading=reading(win())), "plan-wide", None),
        (plan(quota=None), "planned", Reason.NO_READING),
        (plan(quota=reading(win(), verifiable=False)), "planned", Reason.READING_UNVERIFIABLE),
        (plan(quota=reading()), "planned", Reason.READING_UNVERIFIABLE),  # no window at all
        (plan(quota=reading(win(scope=["*opus*"]))), "planned", Reason.READING_UNVERIFIABLE),
        (plan(quota=reading(win(reset=earlier(1)))), "planned", Reason.WINDOW_RESET_PASSED),
        (plan(quota=reading(win(reset=NOW))), "planned", Reason.WINDOW_RESET_PASSED),
        (plan(quota=reading(win(), age_s=181)), "planned", Reason.READING_STALE),
        (plan(quota=reading(win(), age_s=180)), "planned", None),
        (plan(quota=reading(win(), age_s=-120)), "planned", None),
        (plan(quota=reading(win(2.0))), "planned", Reason.QUOTA_EXHAUSTED),
        (plan(quota=reading(win(0.0, reset=later(3600)))), "planned", Reason.QUOTA_EXHAUSTED),
        (plan(quota=reading(win(3.0))), "planned", None),
        (plan(quota=reading(win(3.0, latched=True))), "planned", Reason.BELOW_REENTRY_FLOOR),
        (plan(quota=reading(win(5.0, latched=True))), "planned", Reason.BELOW_REENTRY_FLOOR),
        (plan(quota=reading(win(6.0, latched=True))), "planned", None),
        (plan(quota=reading(win(1.0, latched=True))), "planned", Reason.QUOTA_EXHAUSTED),
        # every applicable window must be usable; one that does not apply is ignored
        (
            plan(quota=reading(win(60.0), win(0.0, name="7d", reset=later(9000)))),
            "planned",
            Reason.QUOTA_EXHAUSTED,
        ),
        (plan(quota=reading(win(60.0), win(0.0, name="7d-opus", scope=["*opus*"]))), "planned", None),
    ],
)
def test_it_gives_each_subscription_pair_its_reason(
    connection: Connection, provider: str, reason: str | None
) -> None:
    assert only_reason(sub(connection, provider=provider)) == reason


def test_it_explains_a_keyless_catalog_row_as_keyless_not_plan() -> None:
    """STATE.md: "a row whose billing is `metered` or `unknown` gives `not_plan_billing`" — a row whose
    billing is `keyless` is not in that list; the keyless reason is `keyless_not_plan`."""
    catalog = (CatalogEntry("freebie", None, "keyless", "hard-stop"),)
    connection = Connection("f", "freebie", "apikey", reading=reading(win()))
    resolution = sub(connection, provider="freebie", catalog=catalog)
    assert only_reason(resolution) == Reason.KEYLESS_NOT_PLAN


# --- precedence (STATE.md: the first in the list wins) -----------------------------------------------------


@pytest.mark.parametrize(
    ("connection", "provider", "reason"),
    [
        (plan(enabled=False, cooldown_until=later(60), quota=None), "planned", Reason.DISABLED),
        (keyless(enabled=False), "anything", Reason.DISABLED),
        (keyless(cooldown_until=later(60)), "anything", Reason.COOLING_DOWN),
        (key("k", cooldown_until=later(60)), "metered-co", Reason.COOLING_DOWN),
        (plan(cooldown_until=later(60), quota=None), "planned", Reason.COOLING_DOWN),
        (Connection("f", "brand-new", keyless=True), "brand-new", Reason.KEYLESS_NOT_PLAN),
        (
            Connection("u", "brand-new", "oauth", overage_override="meters-to-paid"),
            "brand-new",
            Reason.UNCURATED_PROVIDER,
        ),
        (Connection("m", "planned", "apikey"), "planned", Reason.NOT_PLAN_BILLING),
        (Connection("o", "overflowing", "oauth"), "overflowing", Reason.OVERAGE_NOT_HARD_STOP),
        (
            Connection("o", "overflowing", "oauth", reading=reading(win(0.0), verifiable=False, age_s=900)),
            "overflowing",
            Reason.OVERAGE_NOT_HARD_STOP,
        ),
        (
            plan(quota=reading(win(0.0, reset=earlier(5)), verifiable=False, age_s=900)),
            "planned",
            Reason.READING_UNVERIFIABLE,
        ),
        (plan(quota=reading(win(0.0, scope=["*opus*"]), age_s=900)), "planned", Reason.READING_UNVERIFIABLE),
        (plan(quota=reading(win(0.0, reset=earlier(5)), age_s=900)), "planned", Reason.WINDOW_RESET_PASSED),
        (
            plan(quota=reading(win(50.0, reset=earlier(5)), win(0.0, name="7d", reset=later(60)))),
            "planned",
            Reason.WINDOW_RESET_PASSED,
        ),
        (plan(quota=reading(win(0.0, reset=later(60)), age_s=900)), "planned", Reason.READING_STALE),
        (
            plan(quota=reading(win(4.0, latched=True), win(1.0, name="7d", reset=later(60)))),
            "planned",
            Reason.QUOTA_EXHAUSTED,
        ),
    ],
)
def test_it_reports_the_first_reason_in_precedence_order_under_subscription(
    connection: Connection, provider: str, reason: str
) -> None:
    assert only_reason(sub(connection, provider=provider)) == reason


@pytest.mark.parametrize(
    ("connection", "provider", "model", "config", "spend", "reason"),
    [
        (
            key("k", enabled=False, cooldown_until=later(60)),
            "metered-co",
            "premium-model",
            {"premium": 0.0},
            {},
            Reason.DISABLED,
        ),
        (
            key("k", cooldown_until=later(60)),
            "metered-co",
            "premium-model",
            {"premium": 0.0},
            {},
            Reason.COOLING_DOWN,
        ),
        (key("k"), "metered-co", "premium-model", {"premium": 0.0}, {"premium": 5.0}, Reason.RUNG_DISABLED),
        (key("k"), "metered-co", "cheap-model", {"cheap": 1.0}, {"cheap": 1.0}, Reason.BUDGET_EXHAUSTED),
        (
            plan(cooldown_until=later(60), quota=reading(win(0.0))),
            "planned",
            "plan-model",
            {},
            {},
            Reason.COOLING_DOWN,
        ),
        (
            plan(quota=reading(win(4.0, latched=True), win(0.0, name="7d"))),
            "planned",
            "plan-model",
            {},
            {},
            Reason.QUOTA_EXHAUSTED,
        ),
    ],
)
def test_it_reports_the_first_reason_in_precedence_order_under_thrifty(
    connection: Connection,
    provider: str,
    model: str,
    config: dict[str, float],
    spend: dict[str, float],
    reason: str,
) -> None:
    resolution = thrifty(
        connection, provider=provider, model=model, config=LadderConfig(rung_budget_usd=config), spend=spend
    )
    assert only_reason(resolution) == reason


# --- auto/thrifty: rungs, evidence, fail open -------------------------------------------------------------


@pytest.mark.parametrize(
    ("connection", "provider", "model", "rung", "reason"),
    [
        (plan(), "planned", "plan-model", Rung.SUBSCRIPTION, None),
        # missing, unverified or stale telemetry admits a plan connection
        (plan(quota=None), "planned", "plan-model", Rung.SUBSCRIPTION, None),
        (
            plan(quota=reading(win(0.0, reset=later(3600)), verifiable=False)),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            None,
        ),
        (plan(quota=reading(win(0.0), age_s=1200)), "planned", "plan-model", Rung.SUBSCRIPTION, None),
        (
            plan(quota=reading(win(0.0, latched=True), age_s=1200)),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            None,
        ),
        (plan(quota=reading(win(0.0, scope=["*opus*"]))), "planned", "plan-model", Rung.SUBSCRIPTION, None),
        # a window whose reset passed admits
        (
            plan(quota=reading(win(0.0, reset=earlier(1), latched=True))),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            None,
        ),
        # evidence: a fresh verified reading, or a future reset
        (plan(quota=reading(win(0.0))), "planned", "plan-model", Rung.SUBSCRIPTION, Reason.QUOTA_EXHAUSTED),
        (plan(quota=reading(win(2.0))), "planned", "plan-model", Rung.SUBSCRIPTION, Reason.QUOTA_EXHAUSTED),
        (plan(quota=reading(win(3.0))), "planned", "plan-model", Rung.SUBSCRIPTION, None),
        (
            plan(quota=reading(win(4.0, latched=True))),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            Reason.BELOW_REENTRY_FLOOR,
        ),
        (
            plan(quota=reading(win(4.0, latched=True, reset=later(60)), age_s=1200)),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            Reason.BELOW_REENTRY_FLOOR,
        ),
        (
            plan(quota=reading(win(1.0, reset=later(18000)), age_s=1200)),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            Reason.QUOTA_EXHAUSTED,
        ),
        # one window's passed reset does not save another exhausted window with a future reset
        (
            plan(
                quota=reading(
                    win(0.0, reset=earlier(1), latched=True), win(0.0, name="7d", reset=later(86400))
                )
            ),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            Reason.QUOTA_EXHAUSTED,
        ),
        # … but makes the reading non-fresh, so an exhausted window without a reset is no evidence
        (
            plan(quota=reading(win(0.0, reset=earlier(1), latched=True), win(1.0, name="7d"))),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            None,
        ),
        # billing reasons never occur under thrifty: overage and uncurated are just rungs
        (
            Connection("o", "overflowing", "oauth", reading=reading(win())),
            "overflowing",
            "m1",
            Rung.SUBSCRIPTION,
            None,
        ),
        (
            plan(quota=reading(win(), observed="meters-to-paid")),
            "planned",
            "plan-model",
            Rung.SUBSCRIPTION,
            None,
        ),
        (Connection("u", "brand-new", "oauth"), "brand-new", "anything", Rung.PREMIUM, None),
        (Connection("m", "mystery-co", None), "metered-co", "cheap-model", Rung.CHEAP, None),
        # keyless: readings ignored
        (keyless(), "anything", "x", Rung.KEYLESS, None),
        (
            Connection("f", "anything", keyless=True, reading=reading(win(0.0))),
            "anything",
            "x",
            Rung.KEYLESS,
            None,
        ),
        # free rung judged on evidence like rung 0
        (key("k", quota=reading(win(0.0))), "metered-co", "free-model", Rung.FREE, Reason.QUOTA_EXHAUSTED),
        (key("k", quota=reading(win(0.0), age_s=1200)), "metered-co", "free-model", Rung.FREE, None),
        (
            key("k", quota=reading(win(4.0, latched=True))),
            "metered-co",
            "free-model",
            Rung.FREE,
            Reason.BELOW_REENTRY_FLOOR,
        ),
        # cheap and premium ignore readings
        (key("k", quota=reading(win(0.0))), "metered-co", "cheap-model", Rung.CHEAP, None),
        (
            key("k", quota=reading(win(0.0, reset=later(60)))),
            "metered-co",
            "premium-model",
            Rung.PREMIUM,
            None,
        ),
        (key("k", quota=None), "metered-co", "unlisted-model", Rung.PREMIUM, None),
    ],
)
def test_it_places_and_judges_each_thrifty_pair(
    connection: Connection, provider: str, model: str, rung: Rung, reason: str | None
) -> None:
    resolution = thrifty(connection, provider=provider, model=model)
    got = [(int(e.rung), None) for e in resolution.pool] + [
        (None if x.rung is None else int(x.rung), x.reason) for x in resolution.excluded
    ]
    assert got == [(int(rung), reason)]


def test_it_scopes_a_free_window_to_free_models_case_insensitively() -> None:
    k = key("k", quota=reading(win(0.0, name="free-daily", scope=["*:free"], reset=later(43200))))
    resolution = run(
        "auto/thrifty",
        k,
        candidates=[concrete(k, "metered-co", "Llama-3:FREE"), concrete(k, "metered-co", "cheap-model")],
    )
    assert pool_ids(resolution) == [("cheap-model", 3, ("k",))]
    assert reasons(resolution) == [("k", Reason.QUOTA_EXHAUSTED)]


def test_it_only_uses_thrifty_reasons_under_thrifty() -> None:
    connections = [
        plan("a", quota=None),
        plan("b", quota=reading(win(), verifiable=False)),
        plan("c", quota=reading(win(), age_s=900)),
        plan("d", quota=reading(win(reset=earlier(3)))),
        Connection("e", "overflowing", "oauth", reading=reading(win())),
        Connection("f", "brand-new", "oauth"),
        keyless("g"),
        key("h"),
    ]
    resolution = run("auto/thrifty", *connections, candidates=[logical([c.id for c in connections])])
    assert not {x.reason for x in resolution.excluded} & SUB_ONLY_REASONS
    assert resolution.excluded == ()


# --- pool shape: split, order, rewriting ------------------------------------------------------------------


def test_it_splits_a_mixed_rung_logical_candidate() -> None:
    connections = [
        Connection("key1", "claude", "apikey"),
        Connection("sub1", "claude", "oauth", reading=reading(win())),
        Connection("key2", "claude", "APIKEY"),
        Connection("sub2", "claude", "oauth", reading=reading(win())),
    ]
    cand = logical(["key1", "sub1", "key2", "sub2"], "claude", "claude-sonnet-4-5")
    resolution = run("auto/thrifty", *connections, candidates=[cand])
    assert [(e.rung, e.connection_id, e.allowed_connection_ids) for e in resolution.pool] == [
        (Rung.SUBSCRIPTION, None, ("sub1", "sub2")),
        (Rung.PREMIUM, None, ("key1", "key2")),
    ]


def test_it_orders_thrifty_by_rung_then_incoming_order() -> None:
    connections = [plan("s1"), plan("s2"), key("k1"), key("k2"), keyless("f1")]
    candidates = [
        concrete("k1", "metered-co", "premium-model"),
        concrete("k2", "metered-co", "cheap-model"),
        concrete("s2", "planned", "m1"),
        concrete("k1", "metered-co", "cheap-model"),
        concrete("f1", "anything", "keyless-model"),
        concrete("s1", "planned", "plan-model"),
        concrete("k2", "metered-co", "free-model"),
        concrete("k2", "metered-co", "premium-model"),
    ]
    resolution = run("auto/thrifty", *connections, candidates=candidates)
    assert [(e.model, e.connection_id, int(e.rung)) for e in resolution.pool] == [
        ("m1", "s2", 0),
        ("plan-model", "s1", 0),
        ("keyless-model", "f1", 1),
        ("free-model", "k2", 2),
        ("cheap-model", "k2", 3),
        ("cheap-model", "k1", 3),
        ("premium-model", "k1", 4),
        ("premium-model", "k2", 4),
    ]


def test_it_keeps_incoming_order_under_subscription() -> None:
    connections = [plan("a"), plan("b")]
    candidates = [concrete("b", "planned", "plan-model"), concrete("a", "planned", "m1"), logical(["b", "a"])]
    resolution = run("auto/subscription", *connections, candidates=candidates)
    assert pool_ids(resolution) == [("plan-model", 0, ("b",)), ("m1", 0, ("a",)), ("m1", 0, ("b", "a"))]


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty"])
def test_it_rewrites_the_allowlist_to_the_passing_connections_in_incoming_order(model: str) -> None:
    connections = [
        plan("a"),
        plan("b", quota=reading(win(0.0, reset=later(3600)))),
        plan("c"),
        plan("d", enabled=False),
        plan("e"),
    ]
    resolution = run(model, *connections, candidates=[logical(["e", "d", "c", "b", "a"])])
    assert pool_ids(resolution) == [("m1", 0, ("e", "c", "a"))]
    assert reasons(resolution) == [("d", Reason.DISABLED), ("b", Reason.QUOTA_EXHAUSTED)]


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty"])
def test_it_judges_a_repeated_id_once_at_its_first_place(model: str) -> None:
    connections = [plan("a"), plan("b", enabled=False)]
    resolution = run(model, *connections, candidates=[logical(["b", "a", "b", "a", "ghost", "ghost"])])
    assert pool_ids(resolution) == [("m1", 0, ("a",))]
    assert reasons(resolution) == [("b", Reason.DISABLED), ("ghost", Reason.UNKNOWN_CONNECTION)]


def test_it_judges_the_same_connection_again_for_another_candidate() -> None:
    connections = [plan("b", enabled=False)]
    resolution = run(
        "auto/subscription", *connections, candidates=[logical(["b"]), logical(["b"], model="plan-model")]
    )
    assert [(x.model, x.connection_id) for x in resolution.excluded] == [("m1", "b"), ("plan-model", "b")]


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty"])
def test_it_evaluates_a_concrete_candidate_for_its_one_connection(model: str) -> None:
    connections = [plan("a", enabled=False), plan("b"), plan("c", quota=reading(win(0.0)))]
    resolution = run(model, *connections, candidates=[Candidate("planned", "m1", "b", ("a", "b", "c"))])
    assert [(e.connection_id, e.allowed_connection_ids) for e in resolution.pool] == [("b", ("b",))]
    assert resolution.excluded == ()


def test_it_keeps_a_concrete_candidate_outside_its_own_allowlist() -> None:
    resolution = run("auto/subscription", plan("b"), candidates=[Candidate("planned", "m1", "b", ())])
    assert [(e.connection_id, e.allowed_connection_ids) for e in resolution.pool] == [("b", ("b",))]


@pytest.mark.parametrize(
    ("model", "code"),
    [("auto/subscription", "no_verified_subscription_quota"), ("auto/thrifty", "all_rungs_exhausted")],
)
def test_it_counts_an_unknown_connection_as_judged(model: str, code: str) -> None:
    resolution = run(
        model, plan("a"), candidates=[concrete("ghost"), logical(["nobody"], model="plan-model")]
    )
    assert resolution.pool == ()
    assert [(x.model, x.connection_id, x.rung, x.reason) for x in resolution.excluded] == [
        ("m1", "ghost", None, Reason.UNKNOWN_CONNECTION),
        ("plan-model", "nobody", None, Reason.UNKNOWN_CONNECTION),
    ]
    assert resolution.empty is not None
    assert (resolution.empty.code, resolution.empty.retry_at) == (code, None)
    assert resolution.refresh == ()


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty"])
def test_it_never_routes_an_unknown_connection(model: str) -> None:
    resolution = run(model, plan("a"), candidates=[logical(["a", "ghost"])])
    assert pool_ids(resolution) == [("m1", 0, ("a",))]
    assert reasons(resolution) == [("ghost", Reason.UNKNOWN_CONNECTION)]


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty"])
def test_it_yields_nothing_for_a_logical_candidate_without_connections(model: str) -> None:
    resolution = run(model, plan("a"), candidates=[logical([]), logical(["a"], model="plan-model")])
    assert pool_ids(resolution) == [("plan-model", 0, ("a",))]
    assert resolution.excluded == ()
    empty = run(model, plan("a"), candidates=[logical([])])
    assert empty.pool == ()
    assert empty.excluded == ()
    assert empty.empty is not None
    assert empty.empty.code == "no_candidates"


@pytest.mark.parametrize("model", ["auto/subscription", "auto/thrifty", "auto/vision:thrifty"])
def test_it_answers_no_candidates_when_there_is_nothing_to_judge(model: str) -> None:
    nothing: list[list[Candidate] | None] = [[], None]
    for candidates in nothing:
        resolution = run(model, candidates=candidates)
        assert resolution.empty is not None
        assert (resolution.empty.code, resolution.empty.retry_at) == ("no_candidates", None)


@pytest.mark.parametrize(
    ("model", "code"),
    [("auto/subscription", "no_verified_subscription_quota"), ("auto/coding:thrifty", "all_rungs_exhausted")],
)
def test_it_names_the_empty_pool_by_grouping(model: str, code: str) -> None:
    resolution = run(model, plan("a", enabled=False), candidates=[concrete("a")])
    assert resolution.empty is not None
    assert resolution.empty.code == code
    assert resolution.empty.message


def test_it_leaves_empty_unset_when_the_pool_has_entries() -> None:
    assert run("auto/thrifty", plan("a"), candidates=[concrete("a")]).empty is None


def test_it_takes_billing_from_the_connection_and_tier_from_the_candidate() -> None:
    s = plan("s")
    k = key("k")
    candidates = [
        concrete("s", "metered-co", "cheap-model"),  # plan billing: rung 0 whatever the model
        concrete("k", "planned", "cheap-model"),  # (planned, cheap-model) is not in the catalog: premium
        concrete("k", "metered-co", "cheap-model"),
    ]
    resolution = run("auto/thrifty", s, k, candidates=candidates)
    assert [(e.provider, e.connection_id, int(e.rung)) for e in resolution.pool] == [
        ("metered-co", "s", 0),
        ("metered-co", "k", 3),
        ("planned", "k", 4),
    ]


def test_it_judges_windows_against_the_candidate_model() -> None:
    c = Connection(
        "cc",
        "claude",
        "oauth",
        reading=reading(
            win(60.0), win(0.0, name="7d-opus", scope=["*opus*"], reset=later(86400), latched=True)
        ),
    )
    resolution = run(
        "auto/subscription",
        c,
        candidates=[
            logical(["cc"], "claude", "claude-sonnet-4-5"),
            logical(["cc"], "claude", "CLAUDE-OPUS-4-1"),
        ],
    )
    assert pool_ids(resolution) == [("claude-sonnet-4-5", 0, ("cc",))]
    assert reasons(resolution) == [("cc", Reason.QUOTA_EXHAUSTED)]


# --- retry_at ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quota", "expected"),
    [
        # the latest reset among the windows that block the pair
        (reading(win(1.0, reset=later(3600)), win(0.0, name="7d", reset=later(86400))), later(86400)),
        (
            reading(win(4.0, latched=True, reset=later(600)), win(0.0, name="7d", reset=later(300))),
            later(600),
        ),
        # a usable window's reset is not a blocking reset
        (reading(win(0.0, reset=later(3600)), win(60.0, name="7d", reset=later(86400 * 3))), later(3600)),
        # nothing if one blocking window has no reset
        (reading(win(0.0, reset=later(3600)), win(0.0, name="7d")), None),
        (reading(win(0.0)), None),
    ],
)
def test_it_retries_a_subscription_pair_when_its_blocking_windows_reset(
    quota: object, expected: datetime | None
) -> None:
    resolution = sub(plan(quota=quota))  # type: ignore[arg-type]
    assert retry(resolution) == expected


@pytest.mark.parametrize(
    ("quota", "expected"),
    [
        # thrifty counts only the windows that are evidence: a stale reading's exhausted window without
        # a reset is no evidence, so it does not erase the retry time of the one with a future reset
        (reading(win(0.0, reset=later(18000)), win(0.0, name="7d"), age_s=1200), later(18000)),
        # fresh: both are evidence, one has no reset
        (reading(win(0.0, reset=later(18000)), win(0.0, name="7d")), None),
        (reading(win(0.0, reset=earlier(1)), win(0.0, name="7d", reset=later(86400))), later(86400)),
        (reading(win(4.0, latched=True, reset=later(900))), later(900)),
    ],
)
def test_it_retries_a_thrifty_pair_when_its_evidence_resets(quota: object, expected: datetime | None) -> None:
    resolution = thrifty(plan(quota=quota))  # type: ignore[arg-type]
    assert resolution.pool == ()
    assert retry(resolution) == expected


def test_it_retries_at_the_earliest_pair() -> None:
    connections = [
        plan("a", quota=reading(win(0.0, reset=later(7200)))),
        plan("b", cooldown_until=later(1800)),
        plan("c", quota=reading(win(0.0, reset=later(3600)))),
    ]
    resolution = run("auto/subscription", *connections, candidates=[logical(["a", "b", "c"])])
    assert retry(resolution) == later(1800)


@pytest.mark.parametrize(
    ("model", "connection", "provider", "model_id", "config", "expected"),
    [
        ("auto/subscription", plan(cooldown_until=later(60)), "planned", "m1", {}, later(60)),
        # an unverifiable plan can still qualify later: its cooldown counts
        ("auto/subscription", plan(cooldown_until=later(60), quota=None), "planned", "m1", {}, later(60)),
        # never-qualifying pairs contribute nothing, whatever reason they show
        ("auto/subscription", key("k", cooldown_until=later(60)), "metered-co", "cheap-model", {}, None),
        ("auto/subscription", keyless(cooldown_until=later(60)), "anything", "x", {}, None),
        (
            "auto/subscription",
            Connection("u", "brand-new", "oauth", cooldown_until=later(60)),
            "brand-new",
            "x",
            {},
            None,
        ),
        (
            "auto/subscription",
            Connection("o", "overflowing", "oauth", cooldown_until=later(60)),
            "overflowing",
            "m1",
            {},
            None,
        ),
        ("auto/subscription", plan(enabled=False, cooldown_until=later(60)), "planned", "m1", {}, None),
        ("auto/thrifty", plan(enabled=False, cooldown_until=later(60)), "planned", "plan-model", {}, None),
        ("auto/thrifty", keyless(cooldown_until=later(90)), "anything", "x", {}, later(90)),
        ("auto/thrifty", key("k", cooldown_until=later(90)), "metered-co", "premium-model", {}, later(90)),
        # a cooling-down key on a rung whose budget is 0
        (
            "auto/thrifty",
            key("k", cooldown_until=later(90)),
            "metered-co",
            "premium-model",
            {"premium": 0.0},
            None,
        ),
        ("auto/thrifty", key("k"), "metered-co", "premium-model", {"premium": 0.0}, None),
        (
            "auto/thrifty",
            key("k", cooldown_until=later(90)),
            "metered-co",
            "cheap-model",
            {"premium": 0.0},
            later(90),
        ),
    ],
)
def test_it_retries_cooldowns_only_for_pairs_that_can_qualify(
    model: str,
    connection: Connection,
    provider: str,
    model_id: str,
    config: dict[str, float],
    expected: datetime | None,
) -> None:
    resolution = run(
        model,
        connection,
        candidates=[concrete(connection, provider, model_id)],
        config=LadderConfig(rung_budget_usd=config),
    )
    assert retry(resolution) == expected


@pytest.mark.parametrize(
    ("now", "period", "expected"),
    [
        ("2026-08-22T12:00:00Z", "month", "2026-09-01T00:00:00Z"),
        ("2026-08-22T12:00:00Z", "day", "2026-08-23T00:00:00Z"),
        ("2026-12-15T08:00:00Z", "month", "2027-01-01T00:00:00Z"),
        ("2026-12-31T23:59:59Z", "day", "2027-01-01T00:00:00Z"),
        ("2026-08-23T01:30:00+02:00", "day", "2026-08-23T00:00:00Z"),
        ("2026-09-01T01:00:00+02:00", "month", "2026-09-01T00:00:00Z"),
    ],
)
def test_it_retries_a_spent_budget_when_the_next_period_starts(now: str, period: str, expected: str) -> None:
    config = LadderConfig(rung_budget_usd={"cheap": 5.0}, budget_period=period)  # type: ignore[arg-type]
    k = key("k")
    resolution = run(
        "auto/thrifty",
        k,
        candidates=[concrete(k, "metered-co", "cheap-model")],
        config=config,
        spend={"cheap": 5.0},
        now=at(now),
    )
    assert reasons(resolution) == [("k", Reason.BUDGET_EXHAUSTED)]
    assert retry(resolution) == at(expected)


@pytest.mark.parametrize(
    "connection",
    [
        plan(quota=None),
        plan(quota=reading(win(), verifiable=False)),
        plan(quota=reading(win(), age_s=600)),
        plan(quota=reading(win(0.0, reset=earlier(1)))),
        Connection("m", "planned", "apikey"),
    ],
)
def test_it_gives_no_retry_for_reading_and_billing_reasons(connection: Connection) -> None:
    assert retry(sub(connection)) is None


def test_it_only_reports_future_retry_moments() -> None:
    """A cooldown ending now is over: the pair is judged on its quota; now itself is never a retry time."""
    connection = plan("a", cooldown_until=NOW, quota=reading(win(0.0, reset=later(120))))
    resolution = sub(connection)
    assert reasons(resolution) == [("a", Reason.QUOTA_EXHAUSTED)]
    assert retry(resolution) == later(120)


# --- refresh -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "connection", "provider", "model_id", "refresh"),
    [
        ("auto/subscription", plan(quota=None), "planned", "m1", True),
        ("auto/subscription", plan(quota=reading(win(), age_s=181)), "planned", "m1", True),
        ("auto/subscription", plan(quota=reading(win(), age_s=180)), "planned", "m1", False),
        ("auto/subscription", plan(quota=reading(win(reset=earlier(1)))), "planned", "m1", True),
        ("auto/subscription", plan(quota=reading(win(reset=later(1)))), "planned", "m1", False),
        # whether or not the reading is verifiable
        ("auto/subscription", plan(quota=reading(win(), verifiable=False, age_s=600)), "planned", "m1", True),
        ("auto/subscription", plan(quota=reading(win(), verifiable=False)), "planned", "m1", False),
        # a window that does not apply to the model does not make the reading stale for it
        (
            "auto/subscription",
            plan(quota=reading(win(), win(0.0, name="7d-opus", scope=["*opus*"], reset=earlier(1)))),
            "planned",
            "m1",
            False,
        ),
        # only the rung-0 pairs that passed the billing checks
        ("auto/subscription", Connection("m", "planned", "apikey"), "planned", "m1", False),
        ("auto/subscription", Connection("u", "brand-new", "oauth"), "brand-new", "x", False),
        ("auto/subscription", Connection("o", "overflowing", "oauth"), "overflowing", "m1", False),
        ("auto/subscription", keyless(), "anything", "x", False),
        # never a disabled or cooling-down connection
        ("auto/subscription", plan(quota=None, enabled=False), "planned", "m1", False),
        ("auto/subscription", plan(quota=None, cooldown_until=later(5)), "planned", "m1", False),
        ("auto/thrifty", plan(quota=None, enabled=False), "planned", "plan-model", False),
        ("auto/thrifty", plan(quota=None, cooldown_until=later(5)), "planned", "plan-model", False),
        # thrifty: rungs 0 and 2, non-keyless
        ("auto/thrifty", plan(quota=None), "planned", "plan-model", True),
        ("auto/thrifty", Connection("o", "overflowing", "oauth"), "overflowing", "m1", True),
        (
            "auto/thrifty",
            plan(quota=reading(win(0.0, reset=earlier(1), latched=True))),
            "planned",
            "plan-model",
            True,
        ),
        ("auto/thrifty", key("k", quota=None), "metered-co", "free-model", True),
        ("auto/thrifty", key("k", quota=reading(win(), age_s=900)), "metered-co", "free-model", True),
        ("auto/thrifty", key("k", quota=None), "metered-co", "cheap-model", False),
        ("auto/thrifty", key("k", quota=None), "metered-co", "premium-model", False),
        ("auto/thrifty", keyless(), "anything", "x", False),
        (
            "auto/thrifty",
            Connection("f", "anything", keyless=True, reading=reading(age_s=900)),
            "anything",
            "x",
            False,
        ),
        # also when the pair was excluded by its reading
        (
            "auto/thrifty",
            plan(quota=reading(win(1.0, reset=later(18000)), age_s=1200)),
            "planned",
            "plan-model",
            True,
        ),
        (
            "auto/subscription",
            plan(quota=reading(win(0.0, reset=later(60)), age_s=1200)),
            "planned",
            "m1",
            True,
        ),
    ],
)
def test_it_lists_the_connections_to_refresh(
    model: str, connection: Connection, provider: str, model_id: str, refresh: bool
) -> None:
    resolution = run(model, connection, candidates=[concrete(connection, provider, model_id)])
    assert resolution.refresh == ((connection.id,) if refresh else ())


def test_it_lists_each_refresh_once_in_first_seen_order() -> None:
    connections = [plan("a", quota=None), plan("b", quota=None), plan("c", quota=None), plan("d")]
    candidates = [logical(["b", "d", "a"]), logical(["a", "c", "b"], model="plan-model"), concrete("c")]
    resolution = run("auto/thrifty", *connections, candidates=candidates)
    assert resolution.refresh == ("b", "a", "c")


def test_it_refreshes_under_thrifty_a_connection_that_serves_a_free_model() -> None:
    k = key("k", quota=None)
    candidates = [concrete(k, "metered-co", "cheap-model"), concrete(k, "metered-co", "free-model")]
    assert run("auto/thrifty", k, candidates=candidates).refresh == ("k",)
    assert run("auto/thrifty", k, candidates=candidates[:1]).refresh == ()


# --- candidates built from the catalog ---------------------------------------------------------------------


def test_it_builds_one_logical_candidate_per_catalog_model_of_the_category() -> None:
    connections = [
        Connection("a", "claude", "oauth", models=("claude-opus-4-1",)),
        Connection("b", "claude", "oauth"),
        Connection("x", "planned", "oauth", enabled=False),
        Connection("y", "planned", "apikey", models=()),
        key("k"),
    ]
    s = snap(*connections)
    assert catalog_candidates(s, "reasoning") == [
        Candidate("claude", "claude-sonnet-4-5", None, ("b",)),
        Candidate("claude", "claude-opus-4-1", None, ("a", "b")),
    ]
    assert catalog_candidates(s, "coding") == [
        Candidate("planned", "m1", None, ("x",)),
        Candidate("planned", "plan-model", None, ("x",)),
        Candidate("claude", "claude-sonnet-4-5", None, ("b",)),
        Candidate("claude", "claude-opus-4-1", None, ("a", "b")),
    ]
    assert catalog_candidates(s, "vision") == []
    assert [c.model for c in catalog_candidates(s, None)] == [m.model for m in s.models]


def test_it_keeps_disabled_connections_in_catalog_candidates_to_explain_them() -> None:
    connections = [plan("x", enabled=False), plan("z")]
    resolution = run("auto/coding:subscription", *connections)
    assert pool_ids(resolution) == [("m1", 0, ("z",)), ("plan-model", 0, ("z",))]
    assert [(x.model, x.connection_id, x.reason) for x in resolution.excluded] == [
        ("m1", "x", Reason.DISABLED),
        ("plan-model", "x", Reason.DISABLED),
    ]


def test_it_takes_gateway_candidates_as_given() -> None:
    """Neither the category nor a connection's models list filters candidates sent by the gateway."""
    k = key("k", models=("premium-model",))
    resolution = run("auto/coding:thrifty", k, candidates=[concrete(k, "metered-co", "cheap-model")])
    assert pool_ids(resolution) == [("cheap-model", 3, ("k",))]


def test_it_reports_model_grouping_category_and_time() -> None:
    resolution = run("auto/chat:thrifty", key("k"), now=at("2026-08-22T14:00:00+02:00"))
    assert (resolution.model, resolution.grouping, resolution.category) == (
        "auto/chat:thrifty",
        "thrifty",
        "chat",
    )
    assert resolution.resolved_at == NOW
    assert pool_ids(resolution) == [("cheap-model", 3, ("k",)), ("premium-model", 4, ("k",))]


@pytest.mark.parametrize("model", ["gpt-4o", "auto/subscription:coding", "auto/coding:warp", ""])
def test_it_refuses_an_id_outside_the_grammar(model: str) -> None:
    with pytest.raises(AutoIdError):
        run(model, plan())


# --- L12: recomputed at every resolution ------------------------------------------------------------------


def test_it_recomputes_billing_for_a_snapshot_derived_with_replace() -> None:
    """L12: eligibility is recomputed from the inputs at every resolution; a snapshot derived from another
    (dataclasses.replace) must not reuse the other's billing verdicts."""
    before = snap(plan("c1"))
    assert pool_ids(resolve(before, "auto/subscription", [concrete("c1")], NOW)) == [("m1", 0, ("c1",))]
    metered = (CatalogEntry("planned", "oauth", "metered", "meters-to-paid"),)
    after = dataclasses.replace(before, billing_catalog=metered)
    resolution = resolve(after, "auto/subscription", [concrete("c1")], NOW)
    assert reasons(resolution) == [("c1", Reason.NOT_PLAN_BILLING)]


def test_it_recomputes_overage_when_a_new_reading_lands() -> None:
    before = snap(plan("c1"))
    resolve(before, "auto/subscription", [concrete("c1")], NOW)
    after = dataclasses.replace(
        before, connections=(plan("c1", quota=reading(win(), observed="meters-to-paid")),)
    )
    resolution = resolve(after, "auto/subscription", [concrete("c1")], NOW)
    assert reasons(resolution) == [("c1", Reason.OVERAGE_NOT_HARD_STOP)]


def test_it_uses_a_refilled_plan_again_on_the_next_resolution() -> None:
    exhausted = snap(plan("s", quota=reading(win(0.0, reset=later(60)))), key("k"))
    candidates = [concrete("k", "metered-co", "cheap-model"), concrete("s", "planned", "plan-model")]
    assert [e.connection_id for e in resolve(exhausted, "auto/thrifty", candidates, NOW).pool] == ["k"]
    refilled = snap(plan("s", quota=reading(win(100.0, reset=later(18000)), age_s=0)), key("k"))
    assert [e.connection_id for e in resolve(refilled, "auto/thrifty", candidates, later(61)).pool] == [
        "s",
        "k",
    ]


def test_it_is_deterministic() -> None:
    s = snap(plan("a"), key("k"), keyless("f"))
    first = resolve(s, "auto/thrifty", None, NOW)
    second = resolve(s, "auto/thrifty", None, NOW)
    assert first == second


def test_it_accepts_models_with_no_categories_for_plain_ids() -> None:
    s = snap(key("k"), models=(ModelEntry("metered-co", "bare", 0.5),))
    assert pool_ids(resolve(s, "auto/thrifty", None, NOW)) == [("bare", 3, ("k",))]
    assert resolve(s, "auto/chat:thrifty", None, NOW).empty is not None


def test_it_knows_the_reason_codes_in_the_precedence_order_of_state_md() -> None:
    assert Reason.ALL == (
        "unknown_connection",
        "disabled",
        "cooling_down",
        "keyless_not_plan",
        "uncurated_provider",
        "not_plan_billing",
        "overage_not_hard_stop",
        "rung_disabled",
        "budget_exhausted",
        "no_reading",
        "reading_unverifiable",
        "window_reset_passed",
        "reading_stale",
        "quota_exhausted",
        "reserve_reached",
        "below_reentry_floor",
    )


# --- the verdict memo of a snapshot (L12: inputs may be reused, the resolution is recomputed) ---------------


def test_it_judges_a_connection_once_per_snapshot_and_clock_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_module = importlib.import_module("ladder.domain.resolve")  # the package re-exports resolve()

    judged: list[str] = []
    real = resolve_module._judge_thrifty

    def counting(connection: Connection, *args: object) -> object:
        judged.append(connection.id)
        return real(connection, *args)

    monkeypatch.setattr(resolve_module, "_judge_thrifty", counting)
    s = snap(plan("s1"), key("k1"))
    candidates = [logical(["s1", "k1"]), logical(["s1", "k1"], model="m1")]
    first = resolve(s, "auto/thrifty", candidates, NOW)
    second = resolve(s, "auto/thrifty", candidates, later(1))
    assert judged == ["s1", "k1"]  # the second candidate and the second resolution reuse the verdicts
    assert pool_ids(first) == pool_ids(second)


def test_it_judges_again_once_a_cooldown_has_ended() -> None:
    s = snap(plan("s1", cooldown_until=later(60)))
    candidates = [concrete("s1")]
    assert reasons(resolve(s, "auto/thrifty", candidates, NOW)) == [("s1", Reason.COOLING_DOWN)]
    assert pool_ids(resolve(s, "auto/thrifty", candidates, later(60))) == [("m1", 0, ("s1",))]


def test_it_stops_storing_verdicts_at_its_cap_and_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.import_module("ladder.domain.memo"), "MEMO_MAX_VERDICTS", 3)
    s = snap(plan("s1"), key("k1"))
    # A gateway may send any model names and connection ids: the memo must not grow with them.
    candidates = [logical(["s1", "k1", f"ghost-{i}"], model=f"model-{i}") for i in range(20)]
    resolution = resolve(s, "auto/thrifty", candidates, NOW)
    memo = s.memo[("verdicts", "thrifty")]
    assert memo.stored == 3
    assert len(memo.by_model) <= 3
    assert [x.connection_id for x in resolution.excluded] == [f"ghost-{i}" for i in range(20)]
    assert resolution_equal(resolve(s, "auto/thrifty", candidates, NOW), resolution)


def resolution_equal(a: Resolution, b: Resolution) -> bool:
    return (a.pool, a.excluded, a.empty, a.refresh) == (b.pool, b.excluded, b.empty, b.refresh)


def test_it_walks_candidates_not_pairs_once_their_verdicts_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_module = importlib.import_module("ladder.domain.resolve")  # the package re-exports resolve()

    walked: list[str] = []
    real = resolve_module._judge_candidate

    def counting(
        snapshot: Snapshot, memo: object, grouping: str, candidate: Candidate, *args: object
    ) -> object:
        walked.append(candidate.model)
        return real(snapshot, memo, grouping, candidate, *args)

    monkeypatch.setattr(resolve_module, "_judge_candidate", counting)
    s = snap(plan("s1"), key("k1"))
    candidates = [logical(["s1", "k1"]), logical(["k1", "s1"], model="m2")]
    first = resolve(s, "auto/thrifty", candidates, NOW)
    second = resolve(s, "auto/thrifty", candidates, later(1))
    assert walked == ["m1", "m2"]  # the second resolution reuses each candidate's outcome
    assert resolution_equal(first, second)
    assert second.resolved_at == later(1)


def test_it_walks_a_candidate_with_a_stale_reading_every_time() -> None:
    s = snap(plan("s1", quota=reading(win(50, reset=later(7200)), age_s=600)))
    candidates = [concrete("s1")]
    first = resolve(s, "auto/subscription", candidates, NOW)
    second = resolve(s, "auto/subscription", candidates, later(30))
    assert reasons(first) == reasons(second) == [("s1", Reason.READING_STALE)]
    # The detail tells the reading's age at each resolution, never a remembered one.
    assert [x.detail.split(" ")[2] for x in (*first.excluded, *second.excluded)] == ["600s", "630s"]


def test_it_answers_for_candidates_that_cannot_be_remembered() -> None:
    s = snap(plan("s1"))
    listed = Candidate("planned", "m1", None, ["s1"])  # type: ignore[arg-type]  # a list: unhashable
    assert pool_ids(resolve(s, "auto/thrifty", [listed], NOW)) == [("m1", 0, ("s1",))]
    assert pool_ids(resolve(s, "auto/thrifty", [listed], NOW)) == [("m1", 0, ("s1",))]
