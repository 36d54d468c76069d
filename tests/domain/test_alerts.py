"""Alert rules (issue 20): the conditions of each kind, and what they do to the episodes."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from ladder.domain.alerts import (
    AlertInputs,
    Condition,
    Decision,
    EmptyAutoId,
    Episode,
    PolledConnection,
    Rule,
    alert_email_addresses,
    conditions_holding,
    decide,
    rule_errors,
)
from ladder.domain.types import CatalogEntry, Connection, LadderConfig, Reading, Snapshot, Window
from tests.domain.builders import NOW

MIN = timedelta(minutes=1)
QUIET = {1: 900.0}


def cond(subject: str = "s", rule_id: int = 1) -> Condition:
    return Condition(rule_id, subject, f"{subject} holds")


def ep(subject: str = "s", *, closed: timedelta | None = None, id_: int = 10, rule_id: int = 1) -> Episode:
    """An episode opened an hour ago, closed ``closed`` ago (None: open)."""
    return Episode(id_, rule_id, subject, NOW - 60 * MIN, None if closed is None else NOW - closed)


E_OPEN = ep()
E_CLOSED_RECENTLY = ep(closed=5 * MIN)
E_CLOSED_LONG_AGO = ep(closed=20 * MIN)
E_CLOSED_AT_QUIET_END = ep(closed=15 * MIN)

# (case, conditions, episodes, quiet periods, expected decision)
DECISIONS = [
    ("nothing holds, nothing open", [], [], QUIET, Decision()),
    ("a new condition fires", [cond()], [], QUIET, Decision(fire=(cond(),))),
    ("still holding: kept, no second firing", [cond()], [E_OPEN], QUIET, Decision(keep=((E_OPEN, cond()),))),
    ("stops holding: closed, recovery waits", [], [E_OPEN], QUIET, Decision(close=(E_OPEN,))),
    ("no quiet period: closed and recovered at once", [], [E_OPEN], {1: 0.0},
     Decision(close=(E_OPEN,), recover=(E_OPEN,))),
    ("back within the quiet period: re-opened, no firing", [cond()], [E_CLOSED_RECENTLY], QUIET,
     Decision(reopen=((E_CLOSED_RECENTLY, cond()),))),
    ("away, quiet period not over: nothing", [], [E_CLOSED_RECENTLY], QUIET, Decision()),
    ("away for the whole quiet period: recovered", [], [E_CLOSED_LONG_AGO], QUIET,
     Decision(recover=(E_CLOSED_LONG_AGO,))),
    ("quiet period just over: recovered", [], [E_CLOSED_AT_QUIET_END], QUIET,
     Decision(recover=(E_CLOSED_AT_QUIET_END,))),
    ("back after the quiet period: old one recovered, a new one fires", [cond()], [E_CLOSED_LONG_AGO], QUIET,
     Decision(fire=(cond(),), recover=(E_CLOSED_LONG_AGO,))),
    ("a rule gone (disabled): its open episode closes and recovers", [], [ep(rule_id=7)], QUIET,
     Decision(close=(ep(rule_id=7),), recover=(ep(rule_id=7),))),
    ("subjects are apart", [cond("b")], [ep("a")], QUIET, Decision(fire=(cond("b"),), close=(ep("a"),))),
    ("rules are apart", [cond(rule_id=2)], [E_OPEN], {1: 900.0, 2: 900.0},
     Decision(fire=(cond(rule_id=2),), close=(E_OPEN,))),
    ("a repeated condition counts once", [cond(), cond()], [], QUIET, Decision(fire=(cond(),))),
]  # fmt: skip


@pytest.mark.parametrize(
    ("conditions", "episodes", "quiet", "expected"),
    [case[1:] for case in DECISIONS],
    ids=[case[0] for case in DECISIONS],
)
def test_it_decides(
    conditions: list[Condition], episodes: list[Episode], quiet: dict[int, float], expected: Decision
) -> None:
    assert decide(conditions, episodes, quiet_period_s=quiet, now=NOW) == expected


def test_it_recovers_stray_older_episodes_of_a_subject() -> None:
    older = Episode(1, 1, "s", NOW - 90 * MIN, NOW - 70 * MIN)
    latest = Episode(2, 1, "s", NOW - 60 * MIN, None)
    decision = decide([cond()], [latest, older], quiet_period_s=QUIET, now=NOW)
    assert decision == Decision(keep=((latest, cond()),), recover=(older,))


def test_it_fires_once_and_recovers_once_across_a_flapping_day() -> None:
    """A condition that flaps (on 10 min, off 5 min) for a while, then stays away: one firing, one
    recovery, whatever the number of flaps (the episodes are simulated as the service keeps them)."""
    holding = [True] * 10 + [False] * 5 + [True] * 10 + [False] * 5 + [True] * 10 + [False] * 60
    episodes: dict[int, Episode] = {}
    fired = recovered = 0
    for minute, holds in enumerate(holding):
        now = NOW + minute * MIN
        decision = decide([cond()] if holds else [], list(episodes.values()), quiet_period_s=QUIET, now=now)
        for episode in decision.close:
            episodes[episode.id] = Episode(episode.id, 1, "s", episode.opened_at, now)
        for episode in decision.recover:
            episodes.pop(episode.id)
            recovered += 1
        for episode, _ in decision.reopen:
            episodes[episode.id] = Episode(episode.id, 1, "s", episode.opened_at, None)
        for _ in decision.fire:
            fired += 1
            episodes[minute] = Episode(minute, 1, "s", now, None)
    assert (fired, recovered) == (1, 1)
    assert not episodes


# --- conditions --------------------------------------------------------------------------------

PLAN = CatalogEntry("acme", "oauth", "subscription", "hard-stop")
METERED = CatalogEntry("meter", None, "metered", "meters-to-paid")
RESET = NOW + 120 * MIN


def plan(cid: str = "plan", *windows: Window, enabled: bool = True, provider: str = "acme") -> Connection:
    reading = Reading(fetched_at=NOW - MIN, windows=windows) if windows else None
    return Connection(cid, provider, "oauth", enabled=enabled, reading=reading)


def snapshot(
    *connections: Connection, budgets: dict[str, float] | None = None, spend: dict[str, float] | None = None
) -> Snapshot:  # noqa: E501
    config = LadderConfig(rung_budget_usd=budgets or {})
    return Snapshot(config, (PLAN, METERED), (), connections, spend or {})


def subjects(rule: Rule, inputs: AlertInputs, now: datetime = NOW) -> list[str]:
    return [c.subject for c in conditions_holding([rule], inputs, now)]


LATCHED = Window("5h", 1.0, RESET, latched=True)
FREE = Window("7d", 60.0, RESET)
FORECAST = Window("5h", 30.0, RESET, exhausts_at=NOW + 30 * MIN)
FORECAST_PAST_RESET = Window("5h", 30.0, RESET, exhausts_at=RESET)
RESET_PASSED = Window("5h", 1.0, NOW - MIN, latched=True)

LATCH = Rule(1, "window_latched")
FORECASTS = Rule(1, "window_forecast")
BUDGET_80 = Rule(1, "budget_crossed", threshold=80)
BUDGET_50 = Rule(1, "budget_crossed", threshold=50)
CHEAP_10 = {"cheap": 10.0}

CONDITIONS = [
    ("latched plan window", LATCH, snapshot(plan("p", LATCHED, FREE)), ["p/5h"]),
    ("no latch", LATCH, snapshot(plan("p", FREE)), []),
    ("a latch whose period ended", LATCH, snapshot(plan("p", RESET_PASSED)), []),
    ("a latch on a metered connection", LATCH, snapshot(plan("m", LATCHED, provider="meter")), []),
    ("a latch on a disabled connection", LATCH, snapshot(plan("p", LATCHED, enabled=False)), []),
    ("target narrows", Rule(1, "window_latched", "q"), snapshot(plan("p", LATCHED), plan("q", LATCHED)),
     ["q/5h"]),
    ("forecast before reset", FORECASTS, snapshot(plan("p", FORECAST)), ["p/5h"]),
    ("forecast at reset", FORECASTS, snapshot(plan("p", FORECAST_PAST_RESET)), []),
    ("no forecast", FORECASTS, snapshot(plan("p", FREE)), []),
    ("disabled", Rule(1, "connection_disabled"), snapshot(plan("p", enabled=False), plan("q")), ["p"]),
    ("budget crossed", BUDGET_80, snapshot(budgets=CHEAP_10, spend={"cheap": 8}), ["cheap"]),
    ("budget below", BUDGET_80, snapshot(budgets=CHEAP_10, spend={"cheap": 7.9}), []),
    ("budget not gated", BUDGET_50, snapshot(spend={"cheap": 8}), []),
    ("rung disabled ($0)", BUDGET_50, snapshot(budgets={"premium": 0}), []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "snap", "expected"), [c[1:] for c in CONDITIONS], ids=[c[0] for c in CONDITIONS]
)
def test_it_finds_snapshot_conditions(rule: Rule, snap: Snapshot, expected: list[str]) -> None:
    assert subjects(rule, AlertInputs(snapshot=snap)) == expected


def test_it_words_a_forecast_for_people() -> None:
    (found,) = conditions_holding([FORECASTS], AlertInputs(snapshot(plan("p", FORECAST))), NOW)
    assert "runs out at 2026-08-22T12:30:00Z, 90 min before its reset" in found.summary
    assert found.detail["exhausts_at"] == "2026-08-22T12:30:00Z"


def test_it_finds_empty_auto_ids() -> None:
    inputs = AlertInputs(empty_auto_ids=(EmptyAutoId("auto", NOW - MIN), EmptyAutoId("auto/thrifty", NOW)))
    assert subjects(Rule(1, "auto_id_empty"), inputs) == ["auto", "auto/thrifty"]
    assert subjects(Rule(1, "auto_id_empty", target="auto"), inputs) == ["auto"]


def test_it_finds_stale_readings() -> None:
    polled = (
        PolledConnection("fresh", NOW - 29 * MIN, NOW - 900 * MIN),
        PolledConnection("stale", NOW - 30 * MIN, NOW - 900 * MIN),
        PolledConnection("never", None, NOW - 31 * MIN),
        PolledConnection("new", None, NOW - MIN),
        PolledConnection("hourly, on time", NOW - 90 * MIN, NOW - 900 * MIN, poll_interval_s=3600),
        PolledConnection("hourly, a poll missed", NOW - 120 * MIN, NOW - 900 * MIN, poll_interval_s=3600),
    )
    assert subjects(Rule(1, "readings_stale", threshold=30), AlertInputs(polled=polled)) == [
        "stale",
        "never",
        "hourly, a poll missed",
    ]


@pytest.mark.parametrize(
    ("last_beat_at", "expected"), [(NOW - 10 * MIN, ["beat"]), (NOW - 9 * MIN, []), (None, [])]
)
def test_it_finds_a_silent_beat(last_beat_at: datetime | None, expected: list[str]) -> None:
    assert subjects(Rule(1, "beat_silent", threshold=10), AlertInputs(last_beat_at=last_beat_at)) == expected


# --- rule validation ---------------------------------------------------------------------------

ERRORS = [
    ("window_latched", "", None, 900, {}),
    ("budget_crossed", "", 80, 900, {}),
    ("budget_crossed", "", None, 900, {"threshold": "threshold is required for budget_crossed rules"}),
    ("readings_stale", "", 0, 900, {"threshold": "threshold must be between 1 and 10080 (minutes)"}),
    ("beat_silent", "", None, 900, {"threshold": "threshold is required for beat_silent rules (minutes"}),
    ("window_latched", "", 5, 900, {"threshold": "threshold is not used by window_latched rules"}),
    ("budget_crossed", "free", 50, 900, {"target": "target of a budget_crossed rule must be empty"}),
    ("beat_silent", "x", 10, 900, {"target": "target is not used by beat_silent rules"}),
    ("window_latched", "", None, 10**7, {"quiet_period_s": "quiet_period_s must be between 0 and 604800"}),
    ("nonsense", "", None, 900, {"kind": "kind must be one of"}),
]


@pytest.mark.parametrize(("kind", "target", "threshold", "quiet", "expected"), ERRORS)
def test_it_names_the_field_of_a_bad_rule(
    kind: str, target: str, threshold: int | None, quiet: int, expected: dict[str, str]
) -> None:
    errors = rule_errors(kind=kind, target=target, threshold=threshold, quiet_period_s=quiet)
    assert errors.keys() == expected.keys()
    for name, start in expected.items():
        assert errors[name].startswith(start), errors[name]


def test_it_says_times_to_the_second_and_keeps_them_exact_in_the_detail() -> None:
    window = Window("5h", 30.0, RESET, exhausts_at=NOW + 30 * MIN + timedelta(microseconds=391_270))
    (found,) = conditions_holding([FORECASTS], AlertInputs(snapshot(plan("p", window))), NOW)
    assert "runs out at 2026-08-22T12:30:00Z," in found.summary
    assert found.detail["exhausts_at"] == "2026-08-22T12:30:00.391270Z"


def test_it_splits_e_mail_addresses_on_commas_semicolons_and_new_lines() -> None:
    assert alert_email_addresses(" a@x.org, b@x.org;\n\nc@x.org ;") == ["a@x.org", "b@x.org", "c@x.org"]
    assert alert_email_addresses("") == []
