"""Alert evaluation (issue 20): a day of conditions compressed into simulated ticks (nothing sleeps),
the quiet period, the escalation log's empty auto ids, budgets, and two evaluations at once."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import redis

from ladder import models as m
from ladder.domain.alerts import RULE_KINDS
from ladder.domain.types import PoolEntry, Reading, Resolution, Rung, Window
from ladder.services import alert_delivery, alerts, enqueue
from ladder.services.alerts import alerts_apply, alerts_evaluate, alerts_plan
from ladder.services.escalations import escalation_compare
from ladder.services.readings import reading_record
from tests.alert_receivers import WebhookReceiver, verify_standard_webhook
from tests.dashboard.factories import catalog_row, connection_create

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 8, 22, tzinfo=UTC)
MIN = timedelta(minutes=1)


@dataclass
class Sent:
    """What the service handed to the channels: (rule name, subject, event) per call."""

    events: list[tuple[str, str, str]] = field(default_factory=list)

    def count(self, rule: str, event: str) -> int:
        return sum(1 for name, _, kind in self.events if name == rule and kind == event)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    record = Sent()

    def enqueue(*, episode: m.AlertEpisode, event: str, now: datetime) -> list[m.AlertDelivery]:
        record.events.append((episode.rule.name, episode.subject, event))
        return []

    monkeypatch.setattr(alerts, "enqueue_deliveries", enqueue)
    return record


def plan_connection(cid: str = "plan") -> m.Connection:
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    connection = connection_create(cid)
    connection.set_credential("sk-test")
    connection.save()
    return connection


def read(cid: str, remaining: float, *, at: datetime, reset_at: datetime) -> None:
    reading = Reading(fetched_at=at, windows=(Window("7d", remaining, reset_at),))
    reading_record(connection_id=cid, reading=reading, now=at)


def beat(at: datetime) -> None:
    m.Heartbeat.objects.update_or_create(pk="beat", defaults={"last_at": at})


def test_it_seeds_one_default_rule_per_kind() -> None:
    rules = list(m.AlertRule.objects.values_list("kind", "threshold", "quiet_period_s", "enabled"))
    assert Counter(kind for kind, *_ in rules) == Counter(dict.fromkeys(RULE_KINDS, 1)) + Counter(
        {"budget_crossed": 2}
    )
    assert sorted(t or 0 for kind, t, *_ in rules if kind == "budget_crossed") == [50, 80, 100]
    assert {kind: t for kind, t, *_ in rules if kind in ("readings_stale", "beat_silent")} == {
        "readings_stale": 30,
        "beat_silent": 10,
    }
    assert {(quiet, enabled) for *_, quiet, enabled in rules} == {(900, True)}
    for rule in m.AlertRule.objects.all():
        rule.full_clean()  # every default is a valid rule


def test_it_sends_each_alert_once_per_episode_across_a_day(sent: Sent) -> None:
    """A plan window drains over 4 h and stays spent 2 h, four times a day; readings stop for an hour,
    the beat for half an hour, and the connection is disabled for an hour. Ticks every 5 minutes."""
    plan_connection()
    cycle, drain = 360, 240
    for minute in range(0, 1440 + 60 + 1, 5):
        now = DAY + minute * MIN
        disabled = 800 <= minute < 860
        m.Connection.objects.filter(pk="plan").update(
            enabled=not disabled, disabled_reason="auth_failed" if disabled else None
        )
        if not (400 <= minute < 460 or disabled):
            start = minute - minute % cycle
            remaining = max(0.0, 100.0 - (minute - start) * 100.0 / drain)
            read("plan", remaining, at=now, reset_at=DAY + (start + cycle) * MIN)
        if not 600 <= minute < 630:
            beat(now)
        alerts_evaluate(now=now)

    episodes = Counter(m.AlertEpisode.objects.values_list("rule__kind", flat=True))
    assert episodes == {
        "window_latched": 4,  # latched at 240, 600, 960, 1320; each reset brings it back
        "window_forecast": 6,  # once a cycle, plus once more around the hour the connection was disabled
        "readings_stale": 1,
        "beat_silent": 1,
        "connection_disabled": 1,
    }
    fired = Counter((name, subject) for name, subject, event in sent.events if event == "fired")
    recovered = Counter((name, subject) for name, subject, event in sent.events if event == "recovered")
    assert sum(fired.values()) == m.AlertEpisode.objects.count()
    assert sum(recovered.values()) == m.AlertEpisode.objects.filter(recovered_at__isnull=False).count()
    # Every episode but the forecast of the last, still-draining cycle has recovered: once each.
    assert list(
        m.AlertEpisode.objects.filter(recovered_at__isnull=True).values_list("rule__kind", flat=True)
    ) == ["window_forecast"]
    assert sent.count("Plan window latched", "recovered") == 4
    stale = m.AlertEpisode.objects.get(rule__kind="readings_stale")
    assert (stale.opened_at, stale.closed_at, stale.recovered_at) == (
        DAY + 425 * MIN,
        DAY + 460 * MIN,
        DAY + 475 * MIN,
    )
    silent = m.AlertEpisode.objects.get(rule__kind="beat_silent")
    assert (silent.opened_at, silent.recovered_at) == (DAY + 605 * MIN, DAY + 645 * MIN)
    off = m.AlertEpisode.objects.get(rule__kind="connection_disabled")
    assert off.subject == "plan"
    assert "auth_failed" in off.summary


def test_it_continues_an_episode_that_comes_back_within_the_quiet_period(sent: Sent) -> None:
    """The latch clears for 10 minutes and comes back: the same episode, no second firing; one
    recovery once it stays away for the whole quiet period."""
    plan_connection()
    reset_at = DAY + 300 * MIN
    steps = [(0, 1.0), (5, 1.0), (10, 50.0), (20, 1.0), (30, 1.0), (35, 50.0), (45, 50.0), (50, 50.0)]
    for minute, remaining in steps:
        now = DAY + minute * MIN
        read("plan", remaining, at=now, reset_at=reset_at)
        alerts_evaluate(now=now)
    latched = m.AlertEpisode.objects.filter(rule__kind="window_latched")
    assert latched.count() == 1
    assert [e for e in sent.events if e[0] == "Plan window latched"] == [
        ("Plan window latched", "plan/7d", "fired"),
        ("Plan window latched", "plan/7d", "recovered"),  # at 50: 15 min after it cleared at 35
    ]
    episode = latched.get()
    assert (episode.opened_at, episode.closed_at, episode.recovered_at) == (
        DAY,
        DAY + 35 * MIN,
        DAY + 50 * MIN,
    )


def empty_or_served(auto_id: str, rung: Rung | None, at: datetime) -> None:
    pool = () if rung is None else (PoolEntry("acme", "m1", rung, None, ("plan",)),)
    resolution = Resolution(auto_id, "thrifty", None, at, pool, (), None, ())
    escalation_compare(auto_id=auto_id, resolution=resolution, now=at)


def test_it_alerts_when_an_auto_id_turns_empty_and_when_it_returns(sent: Sent) -> None:
    empty_or_served("auto/thrifty", Rung.CHEAP, DAY)  # the first sight: no event
    empty_or_served("auto/thrifty", None, DAY + MIN)  # the log records "empty"
    alerts_evaluate(now=DAY + 2 * MIN)
    alerts_evaluate(now=DAY + 3 * MIN)
    empty_or_served("auto/thrifty", Rung.PREMIUM, DAY + 4 * MIN)  # back: "up" from empty is "down"
    alerts_evaluate(now=DAY + 5 * MIN)
    alerts_evaluate(now=DAY + 20 * MIN)
    assert m.EscalationEvent.objects.filter(auto_id="auto/thrifty").count() == 2
    assert [e for e in sent.events if e[0] == "Auto id empty"] == [
        ("Auto id empty", "auto/thrifty", "fired"),
        ("Auto id empty", "auto/thrifty", "recovered"),
    ]
    episode = m.AlertEpisode.objects.get(rule__kind="auto_id_empty")
    assert "the pool is empty" in episode.summary


def spend(rung: str, usd: str, *, at: datetime) -> None:
    start = at.replace(hour=0, minute=0, second=0, microsecond=0)
    m.RungSpend.objects.update_or_create(
        period="day", period_start=start, rung=rung, defaults={"spent_usd": Decimal(usd)}
    )


def test_it_alerts_at_50_80_and_100_percent_of_a_budget_once_each(sent: Sent) -> None:
    m.LadderConfiguration.objects.update_or_create(
        pk=1, defaults={"rung_budget_usd": {"cheap": 10.0}, "budget_period": "day"}
    )
    for minute, usd in [(0, "1"), (10, "5"), (20, "6"), (30, "8.5"), (40, "9"), (50, "10"), (60, "12")]:
        spend("cheap", usd, at=DAY + minute * MIN)
        alerts_evaluate(now=DAY + minute * MIN)
    alerts_evaluate(now=DAY + timedelta(days=1))  # a new period: nothing spent yet
    alerts_evaluate(now=DAY + timedelta(days=1, minutes=15))
    budget = [(name, event) for name, subject, event in sent.events if subject == "cheap"]
    assert Counter(budget) == {
        ("Rung budget 50 %", "fired"): 1,
        ("Rung budget 80 %", "fired"): 1,
        ("Rung budget 100 %", "fired"): 1,
        ("Rung budget 50 %", "recovered"): 1,
        ("Rung budget 80 %", "recovered"): 1,
        ("Rung budget 100 %", "recovered"): 1,
    }
    assert "cheap budget at 120 % (≥ 100 %): $12.00 of $10.00 this day" in (
        m.AlertEpisode.objects.get(rule__name="Rung budget 100 %").summary
    )


def test_it_does_not_fire_twice_when_two_evaluations_run_at_once(sent: Sent) -> None:
    plan_connection()
    read("plan", 1.0, at=DAY, reset_at=DAY + 300 * MIN)
    first, second = alerts_plan(now=DAY), alerts_plan(now=DAY)  # both read before either writes
    assert alerts_apply(first, now=DAY).fired == 1
    assert alerts_apply(second, now=DAY).fired == 0
    assert m.AlertEpisode.objects.filter(rule__kind="window_latched").count() == 1

    read("plan", 50.0, at=DAY + 5 * MIN, reset_at=DAY + 300 * MIN)
    alerts_evaluate(now=DAY + 5 * MIN)  # closed
    later = DAY + 25 * MIN
    first, second = alerts_plan(now=later), alerts_plan(now=later)
    assert (alerts_apply(first, now=later).recovered, alerts_apply(second, now=later).recovered) == (1, 0)
    assert Counter(event for _, _, event in sent.events) == {"fired": 1, "recovered": 1}


def test_it_reopens_once_when_two_evaluations_race(sent: Sent) -> None:
    plan_connection()
    reset_at = DAY + 300 * MIN
    read("plan", 1.0, at=DAY, reset_at=reset_at)
    alerts_evaluate(now=DAY)
    read("plan", 50.0, at=DAY + MIN, reset_at=reset_at)
    alerts_evaluate(now=DAY + MIN)
    read("plan", 1.0, at=DAY + 2 * MIN, reset_at=reset_at)
    now = DAY + 2 * MIN
    first, second = alerts_plan(now=now), alerts_plan(now=now)
    assert (alerts_apply(first, now=now).reopened, alerts_apply(second, now=now).reopened) == (1, 0)
    assert m.AlertEpisode.objects.filter(rule__kind="window_latched", closed_at__isnull=True).count() == 1
    assert [event for _, _, event in sent.events] == ["fired"]


def test_it_ignores_disabled_rules(sent: Sent) -> None:
    m.AlertRule.objects.update(enabled=False)
    beat(DAY)
    assert alerts_evaluate(now=DAY + timedelta(hours=1)).as_dict() == {
        "fired": 0,
        "recovered": 0,
        "reopened": 0,
        "closed": 0,
        "kept": 0,
    }
    assert sent.events == []


def test_it_reads_in_a_constant_number_of_queries(
    sent: Sent, django_assert_max_num_queries: pytest.FixtureRequest
) -> None:
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    for i in range(12):
        connection = connection_create(f"plan-{i}", position=i)
        connection.set_credential("sk-test")
        connection.save()
        read(f"plan-{i}", 1.0, at=DAY, reset_at=DAY + 300 * MIN)
    with django_assert_max_num_queries(12):  # type: ignore[operator]
        alerts_plan(now=DAY + MIN)
    assert alerts_evaluate(now=DAY + MIN).fired == 12
    with django_assert_max_num_queries(13):  # type: ignore[operator]
        assert alerts_evaluate(now=DAY + 2 * MIN).kept == 12  # the reads, and one UPDATE


SECRET = "a shared secret"


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


def test_it_delivers_one_firing_and_one_recovery_per_episode_to_a_real_webhook(
    receiver: WebhookReceiver,
    hot: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Three drain cycles of a plan window, the second flapping within the quiet period, evaluated
    every 5 simulated minutes; each delivery the evaluation queues is attempted at once (what the
    worker does) against a local HTTP receiver."""
    queued: list[tuple[int, str]] = []

    def record(name: str, *, args: list[Any], task_id: str, countdown_s: float) -> bool:
        queued.append((args[0], task_id))
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    hook = m.AlertChannel(name="hook", kind="webhook", url=receiver.url())
    hook.set_secret(SECRET)
    hook.full_clean()
    hook.save()
    plan_connection()
    cycle, drain = 120, 60
    for minute in range(0, 3 * cycle + 30, 5):
        now = DAY + minute * MIN
        start = minute - minute % cycle
        remaining = max(0.0, 100.0 - (minute - start) * 100.0 / drain)
        if start == cycle and 70 <= minute - start < 80:
            remaining = 10.0  # the latch clears for 10 minutes: within the quiet period
        if start == 3 * cycle:
            remaining = 100.0  # the drain stops: the last episodes recover
        with django_capture_on_commit_callbacks(execute=True):
            read("plan", remaining, at=now, reset_at=DAY + (start + cycle) * MIN)
            alerts_evaluate(now=now)
        while queued:
            pk, owner = queued.pop(0)
            alert_delivery.delivery_attempt(delivery_pk=pk, owner=owner, now=datetime.now(UTC), lease_s=30)

    events: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for request in receiver.requests:
        assert verify_standard_webhook(SECRET, request.headers, request.body)
        body = request.json()
        events[(body["rule"]["name"], body["subject"], body["opened_at"])].append(body["event"])
    episodes = m.AlertEpisode.objects.all()
    assert len(events) == episodes.count()
    assert Counter(episodes.values_list("rule__kind", flat=True)) == {
        "window_latched": 3,
        "window_forecast": 3,
    }
    assert all(sent == ["fired", "recovered"] for sent in events.values()), events
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == receiver.count() == 12


def test_it_runs_as_a_beat_task_that_expires(settings: Any, sent: Sent) -> None:
    from ladder import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["ladder-alerts-evaluate"]
    assert entry["task"] == tasks.alerts_evaluate.name
    assert entry["schedule"] == settings.LADDER_ALERT_EVALUATE_S == entry["options"]["expire_seconds"]
    beat(datetime.now(UTC) - timedelta(hours=1))
    assert tasks.alerts_evaluate.apply().get()["fired"] == 1  # the silent beat
    assert sent.events == [("Beat silent 10 min", "beat", "fired")]


@pytest.mark.django_db(transaction=True)
def test_a_firing_for_a_rule_deleted_meanwhile_opens_nothing_and_raises_nothing(sent: Sent) -> None:
    """The rule went away between the plan and its firing: the foreign key is checked at commit
    (deferred, on SQLite as on PostgreSQL), and that is "the rule is gone", not a crashed evaluation."""
    gone = m.AlertRule.objects.create(name="gone", kind="beat_silent", threshold=5)
    rule_id = gone.pk
    gone.delete()
    condition = alerts.Condition(rule_id, "beat", "the beat has not ticked")
    assert alerts.episode_fire(condition=condition, now=DAY) == 0
    assert not m.AlertEpisode.objects.exists()
    assert sent.events == []
