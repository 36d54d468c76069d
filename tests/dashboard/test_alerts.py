"""The dashboard's alerts page: episodes, history, deliveries, channels with "send a test", rules."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from ladder.dashboard.pages.alerts import ALERT_HISTORY_PAGE
from ladder.services import enqueue
from tests.dashboard.factories import user_create

pytestmark = pytest.mark.django_db
URL = reverse("ladder:alerts")


def send_test_url(channel: m.AlertChannel) -> str:
    return reverse("ladder:alert_channel_test", args=[channel.pk])


def rule_url(rule: m.AlertRule) -> str:
    return reverse("ladder:alert_rule_edit", args=[rule.pk])


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


@pytest.fixture
def operator(client: Client) -> Client:
    client.force_login(user_create("operator", staff=True, perms=("change_alertchannel", "change_alertrule")))
    return client


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch, hot: redis.Redis) -> list[int]:
    """The delivery pks handed to Celery (recorded, not sent)."""
    sent: list[int] = []

    def record(name: str, *, args: list[Any], task_id: str, countdown_s: float) -> bool:
        sent.append(args[0])
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    return sent


def hook(
    name: str = "ops-hook", url: str = "https://hooks.example.test/T000/B000/secret-token"
) -> m.AlertChannel:
    return m.AlertChannel.objects.create(name=name, kind="slack", url=url)


def rule(name: str = "plan runs out", kind: str = "window_latched", **fields: Any) -> m.AlertRule:
    return m.AlertRule.objects.create(name=name, kind=kind, **fields)


def episode(
    alert_rule: m.AlertRule, subject: str, *, ago_min: int, closed_ago_min: int | None = None
) -> m.AlertEpisode:
    now = timezone.now()
    return m.AlertEpisode.objects.create(
        rule=alert_rule,
        subject=subject,
        summary=f"{subject} latched at 0 %",
        opened_at=now - timedelta(minutes=ago_min),
        last_seen_at=now,
        closed_at=None if closed_ago_min is None else now - timedelta(minutes=closed_ago_min),
    )


def delivery(
    channel: m.AlertChannel, *, status: str, attempts: int, error: str = "", ep: m.AlertEpisode | None = None
) -> m.AlertDelivery:
    return m.AlertDelivery.objects.create(
        delivery_id=uuid.uuid4(),
        episode=ep,
        channel=channel,
        event="fired" if ep else "test",
        status=status,
        attempts=attempts,
        last_error=error,
        created_at=timezone.now(),
    )


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_is_in_the_navigation(viewer: Client) -> None:
    html = viewer.get(reverse("ladder:overview")).content.decode()
    assert f'<a href="{URL}">Alerts</a>' in html


def test_it_has_empty_states(viewer: Client) -> None:
    html = viewer.get(URL).content.decode()
    assert "Nothing is alerting." in html
    assert "No episode has ended." in html
    assert "No delivery yet." in html
    assert "No channel yet" in html


def test_it_shows_open_episodes_history_and_deliveries_with_failures(viewer: Client) -> None:
    latched = rule()
    channel = hook()
    now_open = episode(latched, "claude-max/5h", ago_min=12)
    ended = episode(latched, "codex-pro/7d", ago_min=90, closed_ago_min=25)
    delivery(channel, status="sent", attempts=1, ep=now_open)
    delivery(channel, status="failed", attempts=8, error="HTTP 500 from hooks.example.test", ep=ended)

    html = viewer.get(URL).content.decode()

    open_part = html[html.index('id="open-episodes"') : html.index('id="history"')]
    assert "claude-max/5h" in open_part
    assert "open for 12m" in open_part
    assert "codex-pro/7d" not in open_part
    history = html[html.index('id="history"') : html.index('id="deliveries"')]
    assert "codex-pro/7d" in history
    assert "lasted 1h 05m" in history
    deliveries = html[html.index('id="deliveries"') : html.index('id="channels"')]
    assert 'class="delivery delivery-failed"' in deliveries
    assert "HTTP 500 from hooks.example.test" in deliveries
    assert "<td>8</td>" in deliveries
    assert "failed (1)" in deliveries
    assert "sent (1)" in deliveries
    # A Slack webhook's path is its secret: only the host is shown.
    assert "secret-token" not in html
    assert "https://hooks.example.test/…" in html


def test_it_shows_a_channel_whose_stored_url_does_not_parse(viewer: Client) -> None:
    """A row written around the model's validation (a raw update, an older release) still renders,
    its destination said as the admin says it."""
    hook(url="https://[hooks.example.test/T000/secret-token")
    response = viewer.get(URL)
    assert response.status_code == 200
    assert "(invalid URL)" in response.content.decode()
    assert "secret-token" not in response.content.decode()


def test_it_filters_the_deliveries_by_status(viewer: Client) -> None:
    channel = hook()
    delivery(channel, status="sent", attempts=1)
    bad = delivery(channel, status="failed", attempts=3, error="connection refused")
    html = viewer.get(URL, {"status": "failed"}).content.decode()
    deliveries = html[html.index('id="deliveries"') : html.index('id="channels"')]
    assert deliveries.count('class="delivery ') == 1
    assert str(bad.delivery_id) in deliveries


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"page": "0"}, "page"),
        ({"page": "x"}, "page"),
        ({"page": "²"}, "page"),
        ({"page": "9" * 5000}, "page"),
        ({"status": "lost"}, "status"),
    ],
)
def test_it_answers_400_naming_a_bad_parameter(viewer: Client, query: dict[str, str], named: str) -> None:
    response = viewer.get(URL, query)
    assert response.status_code == 400
    assert f"{named} must be" in response.content.decode()


def test_it_pages_the_history(viewer: Client) -> None:
    latched = rule()
    for i in range(ALERT_HISTORY_PAGE + 3):
        episode(latched, f"conn-{i}/5h", ago_min=600 - i, closed_ago_min=500 - i)
    first = viewer.get(URL).content.decode()
    assert first.count('class="episode-closed"') == ALERT_HISTORY_PAGE
    assert 'href="?page=2" rel="next"' in first
    second = viewer.get(URL, {"page": "2"}).content.decode()
    assert second.count('class="episode-closed"') == 3
    assert "conn-0/5h" in second  # the oldest closed last
    assert 'rel="next"' not in second


def test_it_reads_the_page_in_a_fixed_number_of_queries(
    viewer: Client, django_assert_max_num_queries: Any
) -> None:
    latched = rule()
    channel = hook()
    for i in range(30):
        ep = episode(latched, f"conn-{i}/5h", ago_min=60, closed_ago_min=None if i % 2 else 10)
        delivery(channel, status="failed" if i % 3 == 0 else "sent", attempts=2, ep=ep)
    with django_assert_max_num_queries(10):  # 9 measured: session, user, 7 reads
        viewer.get(URL)


def test_it_serves_only_the_live_part_to_htmx(viewer: Client) -> None:
    html = viewer.get(URL, headers={"HX-Request": "true"}).content.decode()
    assert html.lstrip().startswith('<div id="alerts-live"')
    assert 'id="channels"' not in html


# --- send a test ---------------------------------------------------------------------------------


def test_it_queues_a_test_notification_to_a_channel(
    operator: Client, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    channel = hook()
    html = operator.get(URL).content.decode()
    assert f'action="{send_test_url(channel)}"' in html
    assert "Send a test" in html

    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(send_test_url(channel))

    assert response.status_code == 302
    assert response["Location"] == f"{URL}#deliveries"
    test = m.AlertDelivery.objects.get()
    assert (test.channel, test.event, test.status, test.episode) == (channel, "test", "pending", None)
    assert queued == [test.pk]
    page = operator.get(URL).content.decode()
    assert f"Test queued to ops-hook: delivery {test.delivery_id}." in page
    assert f'data-delivery="{test.delivery_id}"' in page


def test_it_hides_and_refuses_the_test_button_without_the_permission(
    viewer: Client, queued: list[int]
) -> None:
    channel = hook()
    assert "Send a test" not in viewer.get(URL).content.decode()
    assert viewer.post(send_test_url(channel)).status_code == 403
    assert not m.AlertDelivery.objects.exists()


def test_it_refuses_a_test_without_a_csrf_token(queued: list[int]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_create("operator", staff=True, perms=("change_alertchannel",)))
    assert client.post(send_test_url(hook())).status_code == 403
    assert not m.AlertDelivery.objects.exists()


def test_it_refuses_a_test_by_get_and_answers_404_for_an_unknown_channel(operator: Client) -> None:
    channel = hook()
    assert operator.get(send_test_url(channel)).status_code == 405
    assert operator.post(reverse("ladder:alert_channel_test", args=[channel.pk + 99])).status_code == 404


# --- rule editing --------------------------------------------------------------------------------


def test_it_edits_a_rule(operator: Client) -> None:
    budget = rule("cheap budget", "budget_crossed", threshold=80)
    response = operator.post(rule_url(budget), {"threshold": "50", "quiet_period_s": "1800"})
    assert response.status_code == 302
    budget.refresh_from_db()
    assert (budget.enabled, budget.threshold, budget.quiet_period_s) == (False, 50, 1800)
    html = operator.get(URL).content.decode()
    assert "Rule cheap budget saved (off)." in html

    operator.post(rule_url(budget), {"enabled": "on", "threshold": "100", "quiet_period_s": "900"})
    budget.refresh_from_db()
    assert (budget.enabled, budget.threshold, budget.quiet_period_s) == (True, 100, 900)


def test_it_stores_an_empty_threshold_as_none(operator: Client) -> None:
    latched = rule(threshold=None)
    operator.post(rule_url(latched), {"enabled": "on", "threshold": " ", "quiet_period_s": "60"})
    latched.refresh_from_db()
    assert (latched.enabled, latched.threshold, latched.quiet_period_s) == (True, None, 60)


@pytest.mark.parametrize(
    ("threshold", "quiet", "field"),
    [
        ("lots", "900", "threshold"),
        ("-5", "900", "threshold"),
        ("80", "", "quiet_period_s"),
        ("80", "soon", "quiet_period_s"),
        ("80", "99999999", "quiet_period_s"),
    ],
)
def test_it_refuses_a_bad_rule_naming_the_field(
    operator: Client, threshold: str, quiet: str, field: str
) -> None:
    budget = rule("cheap budget", "budget_crossed", threshold=80)
    response = operator.post(
        rule_url(budget), {"enabled": "on", "threshold": threshold, "quiet_period_s": quiet}
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert f'<li data-field="{field}">{field}: {field} ' in html
    assert f'value="{threshold}"' in html  # what was typed stays in the form
    budget.refresh_from_db()
    assert (budget.threshold, budget.quiet_period_s) == (80, 900)


def test_it_refuses_rule_edits_without_the_permission(viewer: Client) -> None:
    latched = rule()
    assert 'class="rule-edit"' not in viewer.get(URL).content.decode()
    assert viewer.post(rule_url(latched), {"quiet_period_s": "60"}).status_code == 403
    latched.refresh_from_db()
    assert latched.quiet_period_s == 900


def test_it_answers_404_for_an_unknown_rule(operator: Client) -> None:
    assert (
        operator.post(reverse("ladder:alert_rule_edit", args=[999]), {"quiet_period_s": "60"}).status_code
        == 404
    )
