from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import OperationalError
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder import tasks
from ladder.models import Connection, EscalationEvent, Heartbeat, QuotaReading
from ladder.selectors.snapshot import readings_latest
from ladder.services.readings import reading_record
from ladder.services.refresh.fanout import RefreshSummary
from omniroute.celery import app

pytestmark = pytest.mark.django_db


def make_connection(
    upstream: FakeUpstream, cid: str, kind: str = "claude-oauth", **fields: Any
) -> Connection:
    from ladder.providers import ADAPTERS

    adapter = ADAPTERS[kind]
    connection = Connection(
        id=cid,
        provider=adapter.provider,
        auth_type=adapter.auth_type,
        base_url=upstream.url_for(kind, cid),
        **fields,
    )
    connection.set_credential(f"token-{cid}")
    connection.save()
    return connection


def test_it_records_the_beat_and_refreshes_the_due_connections(
    upstream: FakeUpstream, control: FakeUpstreamControl, hot: redis.Redis
) -> None:
    make_connection(upstream, "c1")
    make_connection(upstream, "z1", "zai-glm")
    make_connection(upstream, "later", next_refresh_at=timezone.now() + timedelta(hours=1))
    started = timezone.now()

    result = tasks.refresh_due.apply().get()

    assert result["claimed"] == 2
    assert result["readings"] == 2
    assert result["outcomes"] == {"ok": 2}
    assert set(readings_latest()) == {"c1", "z1"}
    beat = Heartbeat.objects.get(pk="beat").last_at
    assert beat >= started


def test_it_records_the_beat_even_when_nothing_is_due(hot: redis.Redis) -> None:
    result = tasks.refresh_due.apply().get()

    assert result["claimed"] == 0
    assert Heartbeat.objects.filter(pk="beat").exists()


def test_it_claims_for_the_hard_time_limit_and_stops_polling_before_the_soft_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def spy(**kwargs: Any) -> RefreshSummary:
        seen.update(kwargs)
        return RefreshSummary()

    monkeypatch.setattr(tasks, "refresh_due_run", spy)

    tasks.refresh_due.apply().get()

    assert tasks.refresh_due.time_limit == django_settings.LADDER_REFRESH_TIME_LIMIT_S
    assert tasks.refresh_due.soft_time_limit == django_settings.LADDER_REFRESH_SOFT_TIME_LIMIT_S
    assert tasks.refresh_due.soft_time_limit < tasks.refresh_due.time_limit
    assert seen["lease_s"] == tasks.refresh_due.time_limit
    assert seen["deadline_s"] == pytest.approx(tasks.refresh_due.soft_time_limit * 0.6)


def test_it_refreshes_the_connections_it_is_given(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1", next_refresh_at=timezone.now() + timedelta(hours=1))
    make_connection(upstream, "c2")

    result = tasks.refresh_connections.apply(args=(["c1", "unknown"],)).get()

    assert result["outcomes"] == {"ok": 1}
    assert set(readings_latest()) == {"c1"}


def test_it_leaves_a_connection_to_its_claim_holder(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1", claimed_until=timezone.now() + timedelta(seconds=30))

    result = tasks.refresh_connections.apply(args=(["c1"],)).get()

    assert result["claimed"] == 0
    assert not QuotaReading.objects.exists()
    assert control.count("claude-oauth") == 0


def test_it_is_idempotent_for_a_repeated_request(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")

    tasks.refresh_connections.apply(args=(["c1"],)).get()
    tasks.refresh_connections.apply(args=(["c1"],)).get()

    latest = readings_latest()["c1"]
    assert [w.remaining_pct for w in latest.windows] == [63, 78, 96]
    assert not Connection.objects.get(pk="c1").claimed_until


def test_it_retries_a_transient_database_error_with_jittered_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def flaky(**kwargs: Any) -> RefreshSummary:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("the database went away")
        return RefreshSummary()

    monkeypatch.setattr(tasks, "refresh_due_run", flaky)

    assert tasks.refresh_due.apply().get() == RefreshSummary().as_dict()
    assert len(calls) == 2
    assert tasks.refresh_due.retry_jitter is True  # type: ignore[attr-defined]  # set by shared_task
    assert tasks.refresh_due.retry_backoff  # type: ignore[attr-defined]


def test_it_does_not_retry_other_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def broken(**kwargs: Any) -> RefreshSummary:
        calls.append(1)
        raise ValueError("a bug")

    monkeypatch.setattr(tasks, "refresh_due_run", broken)

    result = tasks.refresh_due.apply()

    assert result.failed()
    assert isinstance(result.result, ValueError)
    assert len(calls) == 1


def test_it_purges_history_older_than_the_retention(settings: Any) -> None:
    from ladder.domain.types import Reading, Window

    settings.LADDER_READING_RETENTION_DAYS = 7
    Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    now = timezone.now()
    for days in (30, 8, 6, 0):
        reading_record(
            connection_id="c1", reading=Reading(now - timedelta(days=days), (Window("5h", 50),)), now=now
        )

    assert tasks.readings_purge.apply().get() == {
        "readings": 2,
        "failures": 0,
        "escalations": 0,
        "credential_accesses": 0,
    }
    assert QuotaReading.objects.count() == 2


def test_it_purges_escalation_events_after_their_own_retention(settings: Any) -> None:
    settings.LADDER_READING_RETENTION_DAYS = 7
    settings.LADDER_ESCALATION_RETENTION_DAYS = 30
    now = timezone.now()
    for days in (31, 8, 0):
        EscalationEvent.objects.create(
            auto_id="auto/thrifty", from_rung=0, to_rung=3, kind="up", occurred_at=now - timedelta(days=days)
        )

    assert tasks.readings_purge.apply().get() == {
        "readings": 0,
        "failures": 0,
        "escalations": 1,
        "credential_accesses": 0,
    }
    assert EscalationEvent.objects.count() == 2


# The scheduler closes the database connection between its reads: no test transaction around it.
@pytest.mark.django_db(transaction=True)
def test_it_syncs_the_expiring_beat_entries_into_the_database_scheduler() -> None:
    scheduler = DatabaseScheduler(app=app, lazy=True)
    scheduler.setup_schedule()

    refresh = PeriodicTask.objects.get(name="ladder-refresh-due")
    assert refresh.task == "ladder.tasks.refresh_due"
    assert refresh.interval is not None
    assert refresh.interval.every == django_settings.LADDER_REFRESH_BEAT_S
    assert refresh.interval.period == "seconds"
    assert refresh.expire_seconds == django_settings.LADDER_REFRESH_BEAT_S
    purge = PeriodicTask.objects.get(name="ladder-readings-purge")
    assert purge.task == "ladder.tasks.readings_purge"
    assert purge.expire_seconds == 3600
    assert scheduler.schedule["ladder-refresh-due"].options["expires"] == refresh.expire_seconds
