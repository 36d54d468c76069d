"""What the alert rules read (ladder.selectors, issue 20): only what the enabled kinds need, in a
few queries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ladder import models as m
from ladder.domain.types import Reading, Window
from ladder.selectors.alerts import (
    AlertChannelRow,
    AlertDeliveryRow,
    AlertEpisodeRow,
    AlertRuleRow,
    alert_channels_all,
    alert_deliveries_recent,
    alert_delivery_figures,
    alert_episode_open_counts,
    alert_episodes_closed,
    alert_episodes_open,
    alert_episodes_unrecovered,
    alert_inputs,
    alert_polled_connections,
    alert_rules_all,
    alert_rules_enabled,
)
from ladder.services.readings import reading_record

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def connection(cid: str, *, credential: bool = True, **fields: Any) -> m.Connection:
    row = m.Connection(id=cid, provider="acme", auth_type="oauth", **fields)
    if credential:
        row.set_credential("sk-test")
    row.save()
    return row


def test_it_lists_the_connections_that_should_be_polled_with_their_latest_reading() -> None:
    connection("polled")
    connection("never-read")
    connection("off", enabled=False)
    connection("keyless", keyless=True)
    connection("no-credential", credential=False)
    connection("no-endpoint", last_poll_error="not polled: acme has no quota endpoint")
    for at in (NOW - timedelta(minutes=5), NOW):
        reading = Reading(fetched_at=at, windows=(Window("5h", 50.0, NOW + timedelta(hours=1)),))
        reading_record(connection_id="polled", reading=reading, now=at)
    connection("slow", min_poll_interval_s=3600)
    polled = {
        p.id: (p.last_reading_at, p.poll_interval_s) for p in alert_polled_connections(refresh_interval_s=60)
    }
    assert polled == {"polled": (NOW, 60), "never-read": (None, 60), "slow": (None, 3600)}


def test_it_loads_only_what_the_kinds_read(django_assert_num_queries: Any) -> None:
    m.EscalationState.objects.create(auto_id="auto/thrifty", rung=None, changed_at=NOW)
    m.EscalationState.objects.create(auto_id="auto/subscription", rung=0, changed_at=NOW)
    m.Heartbeat.objects.create(name="beat", last_at=NOW)
    with django_assert_num_queries(2):
        inputs = alert_inputs(kinds={"auto_id_empty", "beat_silent"}, now=NOW)
    assert [e.auto_id for e in inputs.empty_auto_ids] == ["auto/thrifty"]
    assert inputs.last_beat_at == NOW
    assert inputs.snapshot.connections == ()
    assert inputs.polled == ()


def test_it_reads_enabled_rules_and_unrecovered_episodes() -> None:
    m.AlertRule.objects.exclude(kind="beat_silent").update(enabled=False)
    (rule,) = alert_rules_enabled()
    assert (rule.kind, rule.threshold, rule.quiet_period_s) == ("beat_silent", 10, 900.0)
    row = m.AlertRule.objects.get(pk=rule.id)
    common = {"rule": row, "opened_at": NOW, "last_seen_at": NOW}
    m.AlertEpisode.objects.create(subject="open", **common)
    m.AlertEpisode.objects.create(subject="quiet", closed_at=NOW, **common)
    m.AlertEpisode.objects.create(subject="done", closed_at=NOW, recovered_at=NOW, **common)
    assert sorted(e.subject for e in alert_episodes_unrecovered()) == ["open", "quiet"]


def test_it_counts_the_deliveries_and_finds_the_oldest_pending_in_one_query(
    django_assert_num_queries: Any,
) -> None:
    hook = m.AlertChannel.objects.create(name="hook", kind="webhook", url="https://hook.example.com/")
    mail = m.AlertChannel.objects.create(name="mail", kind="email", email_to="ops@example.com")
    for to, status, minutes in (
        (hook, "pending", 30),
        (hook, "pending", 5),
        (hook, "sent", 60),
        (mail, "failed", 90),
    ):
        m.AlertDelivery.objects.create(
            delivery_id=uuid.uuid4(),
            channel=to,
            event="test",
            status=status,
            created_at=NOW - timedelta(minutes=minutes),
        )
    with django_assert_num_queries(1):
        figures = alert_delivery_figures()
    assert figures.counts == {("webhook", "pending"): 2, ("webhook", "sent"): 1, ("email", "failed"): 1}
    assert figures.oldest_pending == {"webhook": NOW - timedelta(minutes=30)}


def test_it_counts_the_open_episodes_by_rule_kind_in_one_query(django_assert_num_queries: Any) -> None:
    m.AlertRule.objects.all().delete()
    rule = m.AlertRule.objects.create(name="beat", kind="beat_silent", threshold=10)
    m.AlertEpisode.objects.create(rule=rule, subject="a", opened_at=NOW, last_seen_at=NOW)
    m.AlertEpisode.objects.create(rule=rule, subject="b", opened_at=NOW, last_seen_at=NOW, closed_at=NOW)
    with django_assert_num_queries(1):
        assert alert_episode_open_counts() == {"beat_silent": 1}


def test_it_reads_what_the_alerts_page_shows_as_values(django_assert_num_queries: Any) -> None:
    hook = m.AlertChannel.objects.create(
        name="hook", kind="slack", url="https://hooks.example.test/T0/secret"
    )
    mail = m.AlertChannel.objects.create(name="mail", kind="email", email_to="a@x.test\nb@x.test")
    rule = m.AlertRule.objects.create(name="latched", kind="window_latched")
    rule.channels.add(hook)
    m.AlertRule.objects.create(name="beat", kind="beat_silent", enabled=False)
    opened = m.AlertEpisode.objects.create(rule=rule, subject="c1/5h", opened_at=NOW, last_seen_at=NOW)
    closed = m.AlertEpisode.objects.create(
        rule=rule, subject="c2/5h", opened_at=NOW, last_seen_at=NOW, closed_at=NOW + timedelta(minutes=1)
    )
    test_id = uuid.uuid4()
    m.AlertDelivery.objects.create(
        delivery_id=uuid.UUID(int=1), episode=opened, channel=mail, event="fired", created_at=NOW
    )
    m.AlertDelivery.objects.create(
        delivery_id=test_id, channel=hook, event="test", status="failed", created_at=NOW
    )
    with django_assert_num_queries(6):
        episodes = (alert_episodes_open(), alert_episodes_closed())
        deliveries = alert_deliveries_recent(status="failed")
        channels, rules = alert_channels_all(), alert_rules_all()
    assert episodes == (
        [AlertEpisodeRow(opened.pk, "latched", "window_latched", "c1/5h", "", NOW, None)],
        [
            AlertEpisodeRow(
                closed.pk, "latched", "window_latched", "c2/5h", "", NOW, NOW + timedelta(minutes=1)
            )
        ],
    )
    assert deliveries == [AlertDeliveryRow(str(test_id), NOW, "test", "hook", "test", "failed", 0, "", None)]
    assert channels == [
        AlertChannelRow(hook.pk, "hook", "slack", "https://hooks.example.test/…", True),
        AlertChannelRow(mail.pk, "mail", "email", "a@x.test, b@x.test", True),
    ]
    ours = [(r.name, r.channels) for r in rules if r.name in ("beat", "latched")]
    assert ours == [("beat", ()), ("latched", ("hook",))]
    assert isinstance(rules[0], AlertRuleRow)
