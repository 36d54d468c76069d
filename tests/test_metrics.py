from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import redis
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder import models as m
from ladder.domain.alerts import ALERT_CHANNEL_KINDS, ALERT_DELIVERY_STATUSES, RULE_KINDS
from ladder.domain.types import Reading, Window
from ladder.providers import ADAPTERS
from ladder.security.redis_breaker import redis_forget_outages
from ladder.services.readings import reading_record
from ladder.services.refresh.fanout import refresh_connections_run
from ladder.services.state import configuration_update
from ladder.services.tokens import gateway_token_create
from ladder.services.usage import UsageInput, usage_record
from omniroute.settings import envnetworks

pytestmark = pytest.mark.django_db

PATH = "/metrics"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client, **extra: Any) -> Samples:
    response = client.get(PATH, **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def series(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (sample, labels), v in samples.items() if sample == name}


def plan(connection_id: str, windows: tuple[Window, ...], *, age_s: float = 0.0, **fields: Any) -> None:
    m.Connection.objects.create(id=connection_id, provider="claude", auth_type="oauth", **fields)
    now = timezone.now()
    reading = Reading(fetched_at=now - timedelta(seconds=age_s), windows=windows)
    reading_record(connection_id=connection_id, reading=reading, now=now)


def resolve(client: Client, token: str, model: str) -> dict[str, Any]:
    response = client.post(
        "/api/v1/pools/resolve",
        data=json.dumps({"model": model}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def channel(name: str, kind: str) -> m.AlertChannel:
    if kind == "email":
        return m.AlertChannel.objects.create(name=name, kind=kind, email_to="ops@example.com")
    return m.AlertChannel.objects.create(name=name, kind=kind, url=f"https://{name}.example.com/hook")


def delivery(to: m.AlertChannel, status: str, *, age_s: float = 0.0) -> m.AlertDelivery:
    return m.AlertDelivery.objects.create(
        delivery_id=uuid.uuid4(),
        channel=to,
        event="test",
        status=status,
        created_at=timezone.now() - timedelta(seconds=age_s),
    )


def episode(rule: m.AlertRule, subject: str, *, closed: bool = False) -> m.AlertEpisode:
    now = timezone.now()
    return m.AlertEpisode.objects.create(
        rule=rule, subject=subject, opened_at=now, last_seen_at=now, closed_at=now if closed else None
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def token() -> str:
    return gateway_token_create(name="gateway", scope_resolve=True, scope_report=True)[1]


# --- the families ----------------------------------------------------------------------------


def test_it_reports_quota_latches_reading_age_and_cooldowns(hot: redis.Redis, client: Client) -> None:
    reset_at = timezone.now() + timedelta(hours=2)
    plan("c1", (Window("5h", 42.5, reset_at), Window("7d", 1.0, None)), age_s=120)
    plan("c2", (Window("5h", 80.0, reset_at),), cooldown_until=timezone.now() + timedelta(seconds=600))
    m.Connection.objects.create(id="bare", provider="claude", auth_type="oauth", enabled=False)

    samples = scrape(client)

    window = {"connection": "c1", "provider": "claude"}
    assert value(samples, "ladder_quota_remaining_ratio", **window, window="5h") == 0.425
    assert value(samples, "ladder_quota_remaining_ratio", **window, window="7d") == 0.01
    assert value(samples, "ladder_quota_window_latched", **window, window="5h") == 0
    assert value(samples, "ladder_quota_window_latched", **window, window="7d") == 1
    assert value(
        samples, "ladder_quota_window_reset_timestamp_seconds", **window, window="5h"
    ) == pytest.approx(reset_at.timestamp())
    assert (
        "ladder_quota_window_reset_timestamp_seconds",
        frozenset({**window, "window": "7d"}.items()),
    ) not in (samples)
    assert 120 <= value(samples, "ladder_reading_age_seconds", **window) < 180
    assert set(series(samples, "ladder_reading_age_seconds")) == {
        frozenset({"connection": "c1", "provider": "claude"}.items()),
        frozenset({"connection": "c2", "provider": "claude"}.items()),
    }
    assert (
        500 < value(samples, "ladder_connection_cooldown_seconds", connection="c2", provider="claude") <= 600
    )
    assert value(samples, "ladder_connection_cooldown_seconds", connection="c1", provider="claude") == 0
    assert value(samples, "ladder_connection_enabled", connection="c1", provider="claude") == 1
    assert value(samples, "ladder_connection_enabled", connection="bare", provider="claude") == 0


def test_it_reports_when_each_forecast_window_runs_out(hot: redis.Redis, client: Client) -> None:
    """5 %/10 min from 50 % to the 2 % cutoff: 96 min; a window that burns nothing has no series."""
    m.Connection.objects.create(id="c1", provider="claude", auth_type="oauth")
    now = timezone.now()
    for minutes, pct in ((-20, 60.0), (-10, 55.0), (0, 50.0)):
        windows = (Window("5h", pct, now + timedelta(hours=4)), Window("7d", 80.0, None))
        reading_record(
            connection_id="c1", reading=Reading(now + timedelta(minutes=minutes), windows), now=now
        )

    samples = scrape(client)

    assert set(series(samples, "ladder_window_exhausts_in_seconds")) == {
        frozenset({"connection": "c1", "provider": "claude", "window": "5h"}.items())
    }
    left = value(
        samples, "ladder_window_exhausts_in_seconds", connection="c1", provider="claude", window="5h"
    )
    assert 96 * 60 - 60 < left <= 96 * 60


def test_it_reports_each_connections_reserve_cutoff_and_poll_interval(
    hot: redis.Redis, client: Client
) -> None:
    plan("kept", (Window("5h", 42.5),), reserve_pct=20, min_poll_interval_s=300)
    plan("plain", (Window("5h", 42.5),), min_poll_interval_s=30)

    samples = scrape(client)

    kept = {"connection": "kept", "provider": "claude"}
    plain = {"connection": "plain", "provider": "claude"}
    assert value(samples, "ladder_connection_reserve_ratio", **kept) == 0.2
    assert value(samples, "ladder_connection_cutoff_ratio", **kept) == 0.2
    assert value(samples, "ladder_connection_cutoff_ratio", **plain) == 0.02
    assert value(samples, "ladder_connection_poll_interval_seconds", **kept) == 300
    # No reserve, and a minimum below the refresh interval (60 s): no series.
    assert set(series(samples, "ladder_connection_reserve_ratio")) == {frozenset(kept.items())}
    assert set(series(samples, "ladder_connection_poll_interval_seconds")) == {frozenset(kept.items())}


def test_it_reports_each_connections_base_rung_and_the_rungs_of_its_models(
    hot: redis.Redis, client: Client
) -> None:
    plan("c1", (Window("5h", 50.0, None),))
    m.Connection.objects.create(id="k1", provider="openai", auth_type="apikey")
    m.Connection.objects.create(id="k2", provider="openai", auth_type="apikey", models=["gpt-5"])
    m.Connection.objects.create(id="free", provider="nobody-serves-this", keyless=True)
    openai = m.ModelCatalogEntry.objects.filter(provider="openai")
    cheap = openai.filter(input_usd_per_mtok__lte=Decimal(1)).count()
    premium = openai.filter(input_usd_per_mtok__gt=Decimal(1)).count()
    claude = m.ModelCatalogEntry.objects.filter(provider="claude").count()

    samples = scrape(client)

    assert value(samples, "ladder_connection_rung", connection="c1", provider="claude") == 0
    assert value(samples, "ladder_connection_rung", connection="k1", provider="openai") == 3
    assert value(samples, "ladder_connection_rung", connection="k2", provider="openai") == 4
    assert series(samples, "ladder_connection_models") == {
        frozenset({"connection": "c1", "provider": "claude", "rung": "subscription"}.items()): claude,
        frozenset({"connection": "k1", "provider": "openai", "rung": "cheap"}.items()): cheap,
        frozenset({"connection": "k1", "provider": "openai", "rung": "premium"}.items()): premium,
        frozenset({"connection": "k2", "provider": "openai", "rung": "premium"}.items()): 1,
    }
    assert (
        "ladder_connection_rung",
        frozenset({"connection": "free", "provider": "nobody-serves-this"}.items()),
    ) not in (samples)


def test_it_reports_spend_and_budget_per_rung(hot: redis.Redis, client: Client) -> None:
    m.Connection.objects.create(id="k1", provider="openai", auth_type="apikey")
    configuration_update(rung_budget_usd={"cheap": 5.0, "premium": 0}, budget_period="day")
    now = timezone.now()
    usage_record(
        events=[UsageInput("r1", "k1", "gpt-5-mini", cost_usd=Decimal("1.25"), occurred_at=now)], now=now
    )

    samples = scrape(client)

    assert value(samples, "ladder_rung_spend_usd", rung="cheap") == 1.25
    assert value(samples, "ladder_rung_spend_usd", rung="premium") == 0
    assert value(samples, "ladder_rung_budget_usd", rung="cheap") == 5
    assert value(samples, "ladder_rung_budget_usd", rung="premium") == 0
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert value(samples, "ladder_budget_period_end_timestamp_seconds") == tomorrow.timestamp()


def test_it_counts_resolutions_and_escalations_across_processes(
    hot: redis.Redis, client: Client, token: str
) -> None:
    plan("c1", (Window("5h", 60.0, timezone.now() + timedelta(hours=2)),))
    for _ in range(5):
        resolve(client, token, "auto/subscription")
    for _ in range(2):
        resolve(client, token, "auto/coding:thrifty")
    plan_exhausted = Reading(fetched_at=timezone.now(), windows=(Window("5h", 0.0, None),))
    reading_record(connection_id="c1", reading=plan_exhausted, now=timezone.now())
    for _ in range(3):
        assert resolve(client, token, "auto/subscription")["pool"] == []

    samples = scrape(client)

    assert value(samples, "ladder_resolutions_total", grouping="subscription", outcome="subscription") == 5
    assert value(samples, "ladder_resolutions_total", grouping="subscription", outcome="empty") == 3
    assert value(samples, "ladder_resolutions_total", grouping="thrifty", outcome="subscription") == 2
    assert value(samples, "ladder_resolutions_total", grouping="thrifty", outcome="cheap") == 0
    assert value(samples, "ladder_escalations_total", auto_id="auto/subscription", kind="empty") == 1
    assert value(samples, "ladder_escalations_total", auto_id="auto/subscription", kind="up") == 0
    assert value(samples, "ladder_escalations_total", auto_id="auto/coding:thrifty", kind="up") == 0
    assert value(samples, "ladder_metrics_redis_up") == 1


def test_it_reports_the_refresh_figures_of_real_polls(
    hot: redis.Redis, client: Client, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    for cid in ("ok1", "ok2", "slow", "down", "gone"):
        connection = m.Connection(
            id=cid, provider="claude", auth_type="oauth", base_url=upstream.url_for("claude-oauth", cid)
        )
        connection.set_credential(f"token-{cid}")
        connection.save()
    codex = ADAPTERS["codex-chatgpt"]
    connection = m.Connection(
        id="cx",
        provider=codex.provider,
        auth_type=codex.auth_type,
        base_url=upstream.url_for("codex-chatgpt", "cx"),
        provider_params={"account_id": "acct-1"},
    )
    connection.set_credential("token-cx")
    connection.save()
    control.slow(300, kind="claude-oauth", connection="slow")
    control.error("claude-oauth", "http_502", connection="down")
    control.error("claude-oauth", "token_expired", connection="gone")

    summary = refresh_connections_run(["ok1", "ok2", "slow", "down", "gone", "cx"], lease_s=60.0)
    assert dict(summary.outcomes) == {"ok": 4, "transient": 1, "auth_failed": 1}

    samples = scrape(client)

    assert (
        value(samples, "ladder_quota_remaining_ratio", connection="ok1", provider="claude", window="5h")
        == 0.63
    )
    assert value(samples, "ladder_refresh_polls_total", provider="claude", outcome="ok") == 3
    assert value(samples, "ladder_refresh_polls_total", provider="claude", outcome="transient") == 1
    assert value(samples, "ladder_refresh_polls_total", provider="claude", outcome="auth_failed") == 1
    assert value(samples, "ladder_refresh_polls_total", provider=codex.provider, outcome="ok") == 1
    assert value(samples, "ladder_refresh_failures_total", provider="claude", outcome="transient") == 1
    assert value(samples, "ladder_refresh_failures_total", provider="claude", outcome="auth_failed") == 1
    assert value(samples, "ladder_refresh_failures_total", provider="claude", outcome="rate_limited") == 0
    assert value(samples, "ladder_refresh_failures_total", provider=codex.provider, outcome="failed") == 0
    claude = {"provider": "claude"}
    assert value(samples, "ladder_refresh_duration_seconds_count", **claude) == 5
    assert value(samples, "ladder_refresh_duration_seconds_bucket", **claude, le="+Inf") == 5
    # The slow poll took at least its 300 ms delay: never in the buckets up to 0.25 s.
    assert value(samples, "ladder_refresh_duration_seconds_bucket", **claude, le="0.25") <= 4
    assert value(samples, "ladder_refresh_duration_seconds_sum", **claude) >= 0.3
    assert value(samples, "ladder_refresh_duration_seconds_count", provider=codex.provider) == 1

    refresh_connections_run(["ok1"], lease_s=60.0)
    again = scrape(client)
    assert value(again, "ladder_refresh_polls_total", provider="claude", outcome="ok") == 4
    assert value(again, "ladder_refresh_duration_seconds_count", **claude) == 6


def test_it_still_reports_the_database_figures_when_redis_is_down(
    hot: redis.Redis, client: Client, settings: Any
) -> None:
    plan("c1", (Window("5h", 42.0, None),))
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()

    samples = scrape(client)

    assert value(samples, "ladder_metrics_redis_up") == 0
    assert (
        value(samples, "ladder_quota_remaining_ratio", connection="c1", provider="claude", window="5h")
        == 0.42
    )
    assert series(samples, "ladder_resolutions_total") == {}


def test_it_reports_alert_deliveries_by_channel_kind_and_status(hot: redis.Redis, client: Client) -> None:
    ops, backup, mail = channel("ops", "webhook"), channel("backup", "webhook"), channel("mail", "email")
    delivery(ops, "pending", age_s=600)
    delivery(backup, "pending", age_s=120)
    delivery(ops, "sent")
    delivery(backup, "sent")
    delivery(ops, "failed")
    delivery(mail, "failed")
    delivery(mail, "failed")
    delivery(mail, "sent", age_s=3600)  # long sent: not pending, so not in the oldest pending's age

    samples = scrape(client)

    assert value(samples, "ladder_alert_deliveries", kind="webhook", status="pending") == 2
    assert value(samples, "ladder_alert_deliveries", kind="webhook", status="sent") == 2
    assert value(samples, "ladder_alert_deliveries", kind="webhook", status="failed") == 1
    assert value(samples, "ladder_alert_deliveries", kind="email", status="failed") == 2
    assert value(samples, "ladder_alert_deliveries", kind="email", status="sent") == 1
    assert value(samples, "ladder_alert_deliveries", kind="email", status="pending") == 0
    # Every kind and status has a series (a channel's name is never a label): 4 kinds x 3 statuses.
    assert len(series(samples, "ladder_alert_deliveries")) == 12
    assert value(samples, "ladder_alert_deliveries", kind="discord", status="failed") == 0
    assert 600 <= value(samples, "ladder_alert_delivery_oldest_pending_age_seconds", kind="webhook") < 660
    assert value(samples, "ladder_alert_delivery_oldest_pending_age_seconds", kind="email") == 0
    assert set(series(samples, "ladder_alert_delivery_oldest_pending_age_seconds")) == {
        frozenset({"kind": kind}.items()) for kind in ALERT_CHANNEL_KINDS
    }

    # The stuck one goes out: the oldest pending is now the younger one.
    m.AlertDelivery.objects.filter(status="pending", channel=ops).update(status="sent")
    again = scrape(client)
    assert value(again, "ladder_alert_deliveries", kind="webhook", status="pending") == 1
    assert value(again, "ladder_alert_deliveries", kind="webhook", status="sent") == 3
    assert 120 <= value(again, "ladder_alert_delivery_oldest_pending_age_seconds", kind="webhook") < 180


def test_it_reports_the_open_alert_episodes_by_rule_kind(hot: redis.Redis, client: Client) -> None:
    m.AlertRule.objects.all().delete()  # not the default rules (migration 0020): only these
    budget_50 = m.AlertRule.objects.create(name="b50", kind="budget_crossed", threshold=50)
    budget_80 = m.AlertRule.objects.create(name="b80", kind="budget_crossed", threshold=80)
    beat = m.AlertRule.objects.create(name="beat", kind="beat_silent", threshold=10)
    latched = m.AlertRule.objects.create(name="latched", kind="window_latched")
    episode(budget_50, "cheap")
    episode(budget_80, "cheap")
    episode(budget_50, "premium", closed=True)
    episode(beat, "beat")
    episode(latched, "c1/5h", closed=True)

    samples = scrape(client)

    assert value(samples, "ladder_alert_episodes_open", kind="budget_crossed") == 2
    assert value(samples, "ladder_alert_episodes_open", kind="beat_silent") == 1
    assert value(samples, "ladder_alert_episodes_open", kind="window_latched") == 0
    assert set(series(samples, "ladder_alert_episodes_open")) == {
        frozenset({"kind": kind}.items()) for kind in RULE_KINDS
    }


@pytest.mark.parametrize("connections", [5, 50])
def test_it_costs_a_constant_number_of_queries(
    hot: redis.Redis, client: Client, connections: int, django_assert_max_num_queries: Any
) -> None:
    rule = m.AlertRule.objects.create(name="beat", kind="beat_silent", threshold=10)
    for index in range(connections):
        plan(f"c{index:03d}", (Window("5h", float(index % 100), None), Window("7d", 50.0, None)))
        to = channel(f"ch{index:03d}", ALERT_CHANNEL_KINDS[index % len(ALERT_CHANNEL_KINDS)])
        delivery(to, ALERT_DELIVERY_STATUSES[index % len(ALERT_DELIVERY_STATUSES)], age_s=index)
        episode(rule, f"beat-{index}", closed=index > 0)

    # the configuration, the connections, their readings (2), both catalogs, the spend, the escalations,
    # the alert deliveries, the open alert episodes
    with django_assert_max_num_queries(10):
        samples = scrape(client)
    assert len(series(samples, "ladder_quota_remaining_ratio")) == 2 * connections


# --- access ----------------------------------------------------------------------------------


def test_it_answers_loopback_only_by_default(client: Client) -> None:
    assert client.get(PATH).status_code == 200
    assert client.get(PATH, REMOTE_ADDR="::1").status_code == 200
    refused = client.get(PATH, REMOTE_ADDR="10.1.2.3")
    assert refused.status_code == 403
    assert b"10.1.2.3 is not in LADDER_METRICS_ALLOWED_NETWORKS" in refused.content


def test_it_wants_the_token_when_one_is_set(client: Client, settings: Any) -> None:
    settings.LADDER_METRICS_TOKEN = "s3cret-metrics-token"
    remote = "203.0.113.7"

    missing = client.get(PATH, REMOTE_ADDR=remote)
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get(PATH, headers={"Authorization": "Bearer nope"}, REMOTE_ADDR=remote).status_code == 401
    assert client.get(f"{PATH}?token=s3cret-metrics-token", REMOTE_ADDR=remote).status_code == 401
    allowed = client.get(PATH, headers={"Authorization": "Bearer s3cret-metrics-token"}, REMOTE_ADDR=remote)
    assert allowed.status_code == 200
    assert b"ladder_connection_rung" in allowed.content


def test_it_wants_both_the_network_and_the_token_when_both_are_set(client: Client, settings: Any) -> None:
    settings.LADDER_METRICS_TOKEN = "s3cret-metrics-token"
    settings.LADDER_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    bearer = {"Authorization": "Bearer s3cret-metrics-token"}

    assert client.get(PATH, headers=bearer, REMOTE_ADDR="10.9.8.7").status_code == 200
    assert client.get(PATH, REMOTE_ADDR="10.9.8.7").status_code == 401
    assert client.get(PATH, headers=bearer, REMOTE_ADDR="192.168.1.1").status_code == 403
    assert client.get(PATH, headers=bearer).status_code == 403  # loopback is not in the list


def test_it_lets_any_address_in_when_the_networks_are_set_empty(client: Client, settings: Any) -> None:
    settings.LADDER_METRICS_ALLOWED_NETWORKS = []

    assert client.get(PATH, REMOTE_ADDR="198.51.100.4").status_code == 200


def test_it_checks_the_forwarded_client_behind_a_trusted_proxy(client: Client, settings: Any) -> None:
    settings.LADDER_TRUSTED_PROXY_HOPS = 1

    assert client.get(PATH, HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200
    assert client.get(PATH, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403
    forged = client.get(PATH, HTTP_X_FORWARDED_FOR="127.0.0.1", REMOTE_ADDR="203.0.113.9")
    assert forged.status_code == 403


def test_it_answers_only_get_and_head(client: Client) -> None:
    assert client.head(PATH).status_code == 200
    assert client.post(PATH).status_code == 405


def test_it_reads_the_networks_setting_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LADDER_METRICS_ALLOWED_NETWORKS", raising=False)
    assert envnetworks("LADDER_METRICS_ALLOWED_NETWORKS") is None
    monkeypatch.setenv("LADDER_METRICS_ALLOWED_NETWORKS", " 10.0.0.0/8, ::1/128 ,")
    assert envnetworks("LADDER_METRICS_ALLOWED_NETWORKS") == ["10.0.0.0/8", "::1/128"]
    monkeypatch.setenv("LADDER_METRICS_ALLOWED_NETWORKS", "")
    assert envnetworks("LADDER_METRICS_ALLOWED_NETWORKS") == []
    monkeypatch.setenv("LADDER_METRICS_ALLOWED_NETWORKS", "10.0.0.0/8,10.0.0.300/32")
    with pytest.raises(ValueError, match=r"LADDER_METRICS_ALLOWED_NETWORKS: .*10\.0\.0\.300"):
        envnetworks("LADDER_METRICS_ALLOWED_NETWORKS")


@pytest.fixture(autouse=True)
def _no_stray_redis_outage() -> Iterator[None]:
    yield
    redis_forget_outages()
