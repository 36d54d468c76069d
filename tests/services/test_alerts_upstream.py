"""Alerts from real polls (issue 20): a Claude plan drained by the fake upstream, whose clock is
advanced 20 minutes a step across a day (nothing sleeps), polled through the refresh pipeline and
evaluated after each poll. Every episode fires once and recovers once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream
from ladder import models as m
from ladder.selectors.snapshot import configuration_get
from ladder.services import alerts
from ladder.services.alerts import alerts_evaluate
from ladder.services.refresh.claim import claim_deadline, connections_claim
from ladder.services.refresh.poll import job_fetch, jobs_load
from ladder.services.refresh.store import outcomes_write

pytestmark = pytest.mark.django_db

STEP = timedelta(minutes=20)
# The simulated day lies in the past: the readings' times are checked against the real clock.
START = (timezone.now() - timedelta(days=2)).replace(second=0, microsecond=0)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(freeze_at=START) as running:
        yield running


def test_it_alerts_once_per_episode_from_a_plan_drained_by_the_fake_upstream(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, str, str]] = []

    def enqueue(*, episode: m.AlertEpisode, event: str, now: datetime) -> list[m.AlertDelivery]:
        sent.append((episode.rule.kind, episode.subject, event))
        return []

    monkeypatch.setattr(alerts, "enqueue_deliveries", enqueue)
    connection = m.Connection(
        id="max", provider="claude", auth_type="oauth", base_url=upstream.url_for("claude-oauth", "max")
    )
    connection.set_credential("token-max")
    connection.save()
    control = upstream.control()
    # 100 % → 0 % over 3 h, spent 1 h more, then reset: six cycles a day.
    control.drain("claude-oauth", connection="max", drain_s=3 * 3600, reset_after_s=3600)
    try:
        with httpx.Client(timeout=5) as client:
            day = 3 * 24
            for step in range(day + 2):  # a day, then 40 min at 100 % for the last recoveries
                now = START + step * STEP
                if step:
                    control.advance(STEP.total_seconds())
                if step == day:
                    control.set_remaining("claude-oauth", 100.0, connection="max", reset_at=now + 5 * STEP)
                real_now = timezone.now()
                assert connections_claim(connection_ids=["max"], now=real_now, lease_s=30) == ["max"]
                # The fan-out's steps, with the poll dated at the simulated time.
                until = claim_deadline(real_now, 30)
                (job,) = jobs_load(["max"], claim_until=until)
                outcome = job_fetch(job, client, now=now)
                config = configuration_get().to_domain()
                assert outcomes_write([outcome], claim_until=until, config=config) == ["ok"]
                alerts_evaluate(now=now)
    finally:
        control.close()

    episodes = m.AlertEpisode.objects.all()
    windows = {subject.split("/", 1)[1] for subject in episodes.values_list("subject", flat=True)}
    assert windows  # the plan's windows (the fixture's five_hour, seven_day…), each drained
    per_window = Counter(episodes.values_list("rule__kind", "subject"))
    assert set(per_window.values()) == {6}, per_window  # one latch and one forecast a cycle, per window
    assert {kind for kind, _ in per_window} == {"window_latched", "window_forecast"}
    assert Counter(event for *_, event in sent) == {"fired": episodes.count(), "recovered": episodes.count()}
    assert Counter(sent) == {
        (kind, subject, event): 6 for kind, subject in per_window for event in ("fired", "recovered")
    }
