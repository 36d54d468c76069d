"""docs/grafana/ladder.json: valid JSON, and every metric it queries is one that /metrics exports.

The exported names come from a real scrape of /metrics over data that gives every family samples
(the same route Prometheus takes), never from reading ladder/metrics.py's source.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from ladder import models as m
from ladder.domain.alerts import ALERT_DELIVERY_STATUSES
from ladder.domain.types import Reading, Window
from ladder.services.readings import reading_record
from ladder.services.refresh_metrics import PollRecord, refresh_metrics_record
from ladder.services.state import configuration_update
from ladder.services.tokens import gateway_token_create
from ladder.services.usage import UsageInput, usage_record

pytestmark = pytest.mark.django_db

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "ladder.json"
METRIC = re.compile(r"\bladder_[a-z0-9_]+\b")
SELECTOR = re.compile(r"\b(ladder_[a-z0-9_]+)\{([^}]*)\}")
MATCHER_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
# What the issue asks the dashboard to show: quota per window, forecast, rung per connection, spend
# against budget, resolutions by outcome, escalations; and (issue 20's follow-up) failed alert
# deliveries, the oldest pending one's age, open alert episodes.
REQUIRED = {
    "ladder_quota_remaining_ratio",
    "ladder_window_exhausts_in_seconds",
    "ladder_connection_rung",
    "ladder_rung_spend_usd",
    "ladder_rung_budget_usd",
    "ladder_resolutions_total",
    "ladder_escalations_total",
    "ladder_alert_deliveries",
    "ladder_alert_delivery_oldest_pending_age_seconds",
    "ladder_alert_episodes_open",
}


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def expressions(node: object) -> Iterator[str]:
    """Every PromQL text of the dashboard: panel targets' ``expr`` and the variables' queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            promql = key in ("expr", "definition") or (key == "query" and "ladder_" in str(value))
            if promql and isinstance(value, str):
                yield value
            else:
                yield from expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from expressions(item)


@pytest.fixture
def exported(hot: redis.Redis, client: Client) -> dict[str, set[str]]:
    """Sample name → its label names, from one scrape of /metrics with every family populated."""
    now = timezone.now()
    m.Connection.objects.create(
        id="plan",
        provider="claude",
        auth_type="oauth",
        reserve_pct=10,
        min_poll_interval_s=300,
        cooldown_until=now + timedelta(minutes=5),
    )
    reset = now + timedelta(hours=4)
    for minutes, pct in ((-20, 60.0), (-10, 55.0), (0, 50.0)):
        reading = Reading(now + timedelta(minutes=minutes), (Window("5h", pct, reset), Window("7d", 80.0)))
        reading_record(connection_id="plan", reading=reading, now=now)
    m.Connection.objects.create(id="key", provider="openai", auth_type="apikey")
    configuration_update(rung_budget_usd={"cheap": 5.0, "premium": 20.0}, budget_period="day")
    usage_record(
        events=[UsageInput("r1", "key", "gpt-5-mini", cost_usd=Decimal("1.25"), occurred_at=now)], now=now
    )
    token = gateway_token_create(name="gateway", scope_resolve=True, scope_report=True)[1]
    for model in ("auto/subscription", "auto/thrifty"):
        response = client.post(
            "/api/v1/pools/resolve",
            data=json.dumps({"model": model}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.content
    hook = m.AlertChannel.objects.create(name="ops", kind="webhook", url="https://ops.example.com/hook")
    rule = m.AlertRule.objects.create(name="beat", kind="beat_silent", threshold=10)
    m.AlertEpisode.objects.create(rule=rule, subject="beat", opened_at=now, last_seen_at=now)
    for status in ALERT_DELIVERY_STATUSES:
        m.AlertDelivery.objects.create(
            delivery_id=uuid.uuid4(), channel=hook, event="test", status=status, created_at=now
        )
    assert refresh_metrics_record([PollRecord("claude", "ok", 0.2), PollRecord("claude", "transient", 0.1)])

    response = client.get("/metrics")
    assert response.status_code == 200
    names: dict[str, set[str]] = {}
    empty = []
    for family in text_string_to_metric_families(response.content.decode()):
        if not family.samples:
            empty.append(family.name)
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    assert not empty, f"these families had no data to scrape: {empty}"
    return names


def test_it_is_a_grafana_dashboard() -> None:
    board = dashboard()
    assert board["title"] == "OmniRoute Ladder"
    assert board["uid"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    for panel in panels:
        assert panel["targets"], panel["title"]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert all(t["expr"] and t["refId"] for t in panel["targets"]), panel["title"]


def test_it_names_only_metrics_the_app_exports(exported: dict[str, set[str]]) -> None:
    used = {name for text in expressions(dashboard()) for name in METRIC.findall(text)}
    assert used, "no metric named"
    unknown = sorted(used - set(exported))
    assert not unknown, f"the dashboard queries metrics /metrics does not export: {unknown}"
    assert used >= REQUIRED


def test_it_filters_only_on_labels_the_metrics_carry(exported: dict[str, set[str]]) -> None:
    for text in expressions(dashboard()):
        for name, matchers in SELECTOR.findall(text):
            for label in MATCHER_LABEL.findall(matchers):
                assert label in exported[name], f"{name} has no label {label!r}: {text}"
