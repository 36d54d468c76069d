"""The alert tasks: at least once (acknowledged late, given back when a worker is lost), and thin."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from ladder import tasks
from ladder.services.alert_delivery import AttemptOutcome


def test_deliver_alert_is_acknowledged_late_and_given_back_when_its_worker_is_lost() -> None:
    assert tasks.deliver_alert.acks_late is True
    assert tasks.deliver_alert.reject_on_worker_lost is True


def test_every_alert_beat_entry_expires() -> None:
    expected = {
        "ladder-alerts-sweep": (tasks.alert_deliveries_sweep.name, settings.LADDER_ALERT_SWEEP_S),
        "ladder-alerts-evaluate": (tasks.alerts_evaluate.name, settings.LADDER_ALERT_EVALUATE_S),
    }
    alert_entries = {name for name in settings.CELERY_BEAT_SCHEDULE if name.startswith("ladder-alert")}
    assert alert_entries == set(expected)
    for name, (task, period_s) in expected.items():
        entry: dict[str, Any] = settings.CELERY_BEAT_SCHEDULE[name]
        assert entry["task"] == task
        assert entry["schedule"] == period_s
        assert entry["options"]["expires"] == entry["options"]["expire_seconds"] == period_s


def test_deliver_alert_passes_its_task_id_and_hard_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def attempt(**kwargs: Any) -> AttemptOutcome:
        calls.append(kwargs)
        return AttemptOutcome("sent")

    monkeypatch.setattr(tasks, "delivery_attempt", attempt)
    result = tasks.deliver_alert.apply(args=(7,), task_id="task-7").get()
    assert result == "sent"
    assert calls[0]["delivery_pk"] == 7
    assert calls[0]["owner"] == "task-7"
    assert (
        calls[0]["lease_s"] == settings.LADDER_ALERT_TIME_LIMIT_S
    )  # the hard limit: a killed worker's lapses
