"""Alert rules (issue 20): which conditions hold now, and what that does to the episodes.

A rule watches one kind of condition; each subject it holds for (a connection's window, an auto id, a
budget rung, …) is an episode. An episode fires once, when it opens. When the condition stops holding
it closes, but its recovery waits for the rule's quiet period: if the condition comes back for the
same subject within it, the episode continues (it re-opens, with no second firing), so that a
flapping condition sends one firing and, when it finally stays away for the quiet period, one
recovery. Pure functions, ``now`` passed in; ladder.services.alerts applies the decision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ladder.domain.budgets import rung_budgets
from ladder.domain.resolve import billing_verdict
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import Connection, Snapshot, Thresholds, Window
from ladder.domain.windows import blocking_reason, connection_limits, is_usable, reset_passed

# The rule kinds; RULE_KINDS, below the collectors, lists them in this order.
WINDOW_LATCHED = "window_latched"  # a plan window latched (exhausted or at its reserve)
WINDOW_FORECAST = "window_forecast"  # a plan window is forecast to run out before its reset
AUTO_ID_EMPTY = "auto_id_empty"  # an auto id's pool turned empty (the escalation log); recovers on return
BUDGET_CROSSED = "budget_crossed"  # a rung budget crossed threshold % of its limit
CONNECTION_DISABLED = "connection_disabled"  # a connection disabled, or needing re-authentication
READINGS_STALE = "readings_stale"  # no reading for threshold minutes on a connection that should be polled
BEAT_SILENT = "beat_silent"  # the beat has not ticked for threshold minutes
# The kinds whose threshold is required, and its range: budget % of the limit, minutes otherwise.
THRESHOLD_RANGES: Mapping[str, tuple[int, int, str]] = {
    BUDGET_CROSSED: (1, 1000, "% of the rung's budget"),
    READINGS_STALE: (1, 10_080, "minutes"),
    BEAT_SILENT: (1, 10_080, "minutes"),
}
QUIET_PERIOD_MAX_S = 7 * 86_400
# Where notifications go (only the generic webhook signs), and what each notification is and became.
ALERT_CHANNEL_KINDS: tuple[str, ...] = ("webhook", "slack", "discord", "email")
ALERT_WEBHOOK_KINDS: tuple[str, ...] = ("webhook", "slack", "discord")
ALERT_EVENTS: tuple[str, ...] = ("fired", "recovered", "test")
ALERT_DELIVERY_STATUSES: tuple[str, ...] = ("pending", "sent", "failed")


def alert_email_addresses(text: str) -> list[str]:
    """An e-mail channel's ``email_to``: addresses separated by commas, semicolons or new lines."""
    return [part.strip() for part in re.split(r"[,;\n]", text or "") if part.strip()]


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    kind: str
    target: str = ""
    threshold: int | None = None
    quiet_period_s: float = 900.0


def rule_errors(
    *, kind: str, target: str, threshold: int | None, quiet_period_s: int | None
) -> dict[str, str]:
    """Field → message for a rule that cannot work (the admin, the dashboard and services share it)."""
    errors: dict[str, str] = {}
    if kind not in RULE_KINDS:
        errors["kind"] = f"kind must be one of: {', '.join(RULE_KINDS)}."
        return errors
    bounds = THRESHOLD_RANGES.get(kind)
    if bounds is None:
        if threshold is not None:
            errors["threshold"] = f"threshold is not used by {kind} rules: leave it empty."
    elif threshold is None:
        low, high, unit = bounds
        errors["threshold"] = f"threshold is required for {kind} rules ({unit}, {low}–{high})."
    elif not bounds[0] <= threshold <= bounds[1]:
        errors["threshold"] = f"threshold must be between {bounds[0]} and {bounds[1]} ({bounds[2]})."
    if kind == BEAT_SILENT and target:
        errors["target"] = "target is not used by beat_silent rules: leave it empty."
    if kind == BUDGET_CROSSED and target and target not in ("cheap", "premium"):
        errors["target"] = "target of a budget_crossed rule must be empty, cheap or premium."
    if quiet_period_s is not None and not 0 <= quiet_period_s <= QUIET_PERIOD_MAX_S:
        errors["quiet_period_s"] = f"quiet_period_s must be between 0 and {QUIET_PERIOD_MAX_S} seconds."
    return errors


# --- conditions: what holds now ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Condition:
    """A rule's condition holding for one subject now, with its words for people."""

    rule_id: int
    subject: str
    summary: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PolledConnection:
    """A connection that should be polled (enabled, not keyless, a credential, an adapter that polls),
    with when it was last read (its latest reading, else its creation) and how long its healthy polls
    lie apart (the refresh interval, or its slower poll floor: DESIGN L5)."""

    id: str
    last_reading_at: datetime | None
    created_at: datetime
    poll_interval_s: float = 0.0


@dataclass(frozen=True, slots=True)
class EmptyAutoId:
    """An auto id whose last gateway resolution had an empty pool (the escalation log's state)."""

    auto_id: str
    since: datetime


@dataclass(frozen=True, slots=True)
class AlertInputs:
    """Everything the rules read, loaded by ladder.selectors.alerts.alert_inputs in a few queries."""

    snapshot: Snapshot = field(default_factory=Snapshot)
    polled: tuple[PolledConnection, ...] = ()
    empty_auto_ids: tuple[EmptyAutoId, ...] = ()
    last_beat_at: datetime | None = None


def _targets(rule: Rule, subject_key: str) -> bool:
    return not rule.target or rule.target == subject_key


def _said(moment: datetime) -> str:
    """A time in a summary, for people: to the second (the detail keeps it exact)."""
    return format_utc(moment.replace(microsecond=0))


def _pct(value: float) -> str:
    return f"{value:.1f} %"


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{seconds / 3600:.1f} h"


def _plan_windows(
    rule: Rule, snapshot: Snapshot, now: datetime
) -> Iterator[tuple[Connection, Window, Thresholds]]:
    """(connection, window, limits) of every enabled plan (rung 0) connection's latest reading whose
    period has not ended."""
    for connection in snapshot.connections:
        if not connection.enabled or connection.reading is None or not _targets(rule, connection.id):
            continue
        if billing_verdict(snapshot, connection).billing != "subscription":
            continue
        limits = connection_limits(connection, snapshot.config)
        for window in connection.reading.windows:
            if not reset_passed(window, now):
                yield connection, window, limits


def _window_condition(
    rule: Rule, connection: Connection, window: Window, summary: str, **detail: object
) -> Condition:
    """A plan window's condition: "<connection>: plan window <name> <summary>", and its detail."""
    return Condition(
        rule.id,
        f"{connection.id}/{window.name}",
        f"{connection.id}: plan window {window.name} {summary}",
        {
            "connection_id": connection.id,
            "window": window.name,
            "remaining_pct": window.remaining_pct,
            **detail,
            "reset_at": format_utc_or_none(window.reset_at),
        },
    )


def window_latched(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    for connection, window, limits in _plan_windows(rule, inputs.snapshot, now):
        if not window.latched:
            continue
        reason = "latched" if is_usable(window, limits) else blocking_reason(window, limits)
        resets = f"; resets at {_said(window.reset_at)}" if window.reset_at else ""
        summary = f"latched at {_pct(window.remaining_pct)} ({reason}){resets}"
        yield _window_condition(rule, connection, window, summary, reason=reason)


def window_forecast(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    for connection, window, limits in _plan_windows(rule, inputs.snapshot, now):
        runs_out = window.exhausts_at
        if runs_out is None or window.latched:
            continue
        if window.reset_at is not None and runs_out >= window.reset_at:
            continue
        before = (
            f", {_minutes((window.reset_at - runs_out).total_seconds())} before its reset"
            if window.reset_at is not None
            else ""
        )
        summary = (
            f"runs out at {_said(runs_out)}{before} "
            f"({_pct(window.remaining_pct)} left, cutoff {_pct(limits.cutoff_pct)})"
        )
        yield _window_condition(rule, connection, window, summary, exhausts_at=format_utc(runs_out))


def auto_id_empty(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    for empty in inputs.empty_auto_ids:
        if _targets(rule, empty.auto_id):
            yield Condition(
                rule.id,
                empty.auto_id,
                f"{empty.auto_id}: the pool is empty (since {_said(empty.since)})",
                {"auto_id": empty.auto_id, "since": format_utc(empty.since)},
            )


def budget_crossed(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    if rule.threshold is None:
        return
    snapshot = inputs.snapshot
    for budget in rung_budgets(snapshot.config, snapshot.spend_usd, now).values():
        limit = budget.budget_usd
        if limit is None or limit <= 0 or not _targets(rule, budget.rung):
            continue  # not gated, or a disabled rung (budget $0): nothing to cross
        used_pct = 100.0 * budget.spent_usd / limit
        if used_pct < rule.threshold:
            continue
        yield Condition(
            rule.id,
            budget.rung,
            f"{budget.rung} budget at {used_pct:.0f} % (≥ {rule.threshold} %): "
            f"${budget.spent_usd:.2f} of ${limit:.2f} this {snapshot.config.budget_period}",
            {
                "rung": budget.rung,
                "spent_usd": budget.spent_usd,
                "budget_usd": limit,
                "used_pct": used_pct,
                "threshold_pct": rule.threshold,
                "period_ends_at": format_utc(budget.period_ends_at),
            },
        )


def connection_disabled(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    for connection in inputs.snapshot.connections:
        if connection.enabled or not _targets(rule, connection.id):
            continue
        reason = connection.disabled_reason or "disabled"
        yield Condition(
            rule.id,
            connection.id,
            f"{connection.id}: connection disabled ({reason})",
            {"connection_id": connection.id, "reason": reason},
        )


def readings_stale(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    if rule.threshold is None:
        return
    threshold_s = rule.threshold * 60.0
    for polled in inputs.polled:
        since = polled.last_reading_at or polled.created_at
        # A connection polled less often than the threshold (a slow floor) is stale only once it
        # misses a poll: two of its intervals without a reading.
        limit = timedelta(seconds=max(threshold_s, 2 * polled.poll_interval_s))
        if now - since < limit or not _targets(rule, polled.id):
            continue
        what = "no reading since" if polled.last_reading_at else "never read; created at"
        yield Condition(
            rule.id,
            polled.id,
            f"{polled.id}: {what} {_said(since)} ({_minutes((now - since).total_seconds())}): "
            "is the poller running?",
            {
                "connection_id": polled.id,
                "last_reading_at": format_utc_or_none(polled.last_reading_at),
                "threshold_min": rule.threshold,
                "poll_interval_s": polled.poll_interval_s,
            },
        )


def beat_silent(rule: Rule, inputs: AlertInputs, now: datetime) -> Iterator[Condition]:
    last = inputs.last_beat_at
    if rule.threshold is None or last is None or now - last < timedelta(minutes=rule.threshold):
        return  # no beat recorded yet: nothing says how long it has been silent
    yield Condition(
        rule.id,
        "beat",
        f"the beat has not ticked since {_said(last)} ({_minutes((now - last).total_seconds())})",
        {"last_beat_at": format_utc(last), "threshold_min": rule.threshold},
    )


COLLECTORS: Mapping[str, Callable[[Rule, AlertInputs, datetime], Iterator[Condition]]] = {
    WINDOW_LATCHED: window_latched,
    WINDOW_FORECAST: window_forecast,
    AUTO_ID_EMPTY: auto_id_empty,
    BUDGET_CROSSED: budget_crossed,
    CONNECTION_DISABLED: connection_disabled,
    READINGS_STALE: readings_stale,
    BEAT_SILENT: beat_silent,
}
RULE_KINDS: tuple[str, ...] = tuple(COLLECTORS)
# The kinds that read the snapshot (the others need not load it).
SNAPSHOT_KINDS = frozenset({WINDOW_LATCHED, WINDOW_FORECAST, BUDGET_CROSSED, CONNECTION_DISABLED})


def conditions_holding(rules: Iterable[Rule], inputs: AlertInputs, now: datetime) -> list[Condition]:
    """Every (rule, subject) whose condition holds now, in rule order."""
    found: list[Condition] = []
    for rule in rules:
        collector = COLLECTORS.get(rule.kind)
        if collector is not None:
            found.extend(collector(rule, inputs, now))
    return found


# --- episodes: what the conditions do to them -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Episode:
    """An episode whose recovery is not sent yet: open (closed_at None), or closed within its quiet period."""

    id: int
    rule_id: int
    subject: str
    opened_at: datetime
    closed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    fire: tuple[Condition, ...] = ()  # open an episode, and send its firing
    keep: tuple[tuple[Episode, Condition], ...] = ()  # still holding: refresh its words and last_seen_at
    reopen: tuple[tuple[Episode, Condition], ...] = ()  # back within the quiet period: no second firing
    close: tuple[Episode, ...] = ()  # stopped holding: closed, its recovery waits for the quiet period
    recover: tuple[Episode, ...] = ()  # stayed away for the quiet period: send its recovery


def decide(
    conditions: Iterable[Condition],
    episodes: Iterable[Episode],
    *,
    quiet_period_s: Mapping[int, float],
    now: datetime,
) -> Decision:
    """What the conditions holding now do to the episodes not yet recovered (a rule missing from
    ``quiet_period_s`` has none). An episode in ``close`` whose quiet period is 0 is in ``recover`` too."""
    holding: dict[tuple[int, str], Condition] = {}
    for held in conditions:
        holding.setdefault((held.rule_id, held.subject), held)
    by_key: dict[tuple[int, str], list[Episode]] = {}
    for episode in episodes:
        by_key.setdefault((episode.rule_id, episode.subject), []).append(episode)
    fire: list[Condition] = []
    keep: list[tuple[Episode, Condition]] = []
    reopen: list[tuple[Episode, Condition]] = []
    close: list[Episode] = []
    recover: list[Episode] = []
    for key in sorted(by_key.keys() | holding.keys()):
        condition = holding.get(key)
        found = sorted(by_key.get(key, ()), key=lambda e: (e.opened_at, e.id))
        quiet = timedelta(seconds=max(0.0, quiet_period_s.get(key[0], 0.0)))
        for older in found[:-1]:  # never more than one after a clean run: recover the rest
            if older.closed_at is None:
                close.append(older)
            recover.append(older)
        latest = found[-1] if found else None
        if latest is None:
            if condition is not None:
                fire.append(condition)
        elif latest.closed_at is None:
            if condition is not None:
                keep.append((latest, condition))
            else:
                close.append(latest)
                if not quiet:
                    recover.append(latest)
        elif now - latest.closed_at < quiet:
            if condition is not None:
                reopen.append((latest, condition))
        else:
            recover.append(latest)
            if condition is not None:
                fire.append(condition)
    return Decision(tuple(fire), tuple(keep), tuple(reopen), tuple(close), tuple(recover))


def decide_for_rules(
    rules: Sequence[Rule], inputs: AlertInputs, episodes: Iterable[Episode], *, now: datetime
) -> Decision:
    """The conditions of these rules, and their decision."""
    quiet = {rule.id: float(rule.quiet_period_s) for rule in rules}
    return decide(conditions_holding(rules, inputs, now), episodes, quiet_period_s=quiet, now=now)
