from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import UTC, timedelta
from decimal import Decimal
from typing import Any

import pytest
import redis
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder import models as m
from ladder import tasks
from ladder.security.redis_breaker import redis_forget_outages
from ladder.selectors.snapshot import readings_latest, state_version_get
from ladder.services import enqueue
from ladder.services.refresh.claim import claim_deadline, connections_claim
from ladder.services.refresh.fanout import connections_refresh_many
from ladder.services.refresh.on_demand import refresh_is_pending
from tests.dashboard.factories import editor_create, plan_setup, reading_add, user_create

pytestmark = pytest.mark.django_db


def url(connection_id: str = "plan-1") -> str:
    return reverse("ladder:connection_page", args=[connection_id])


def refresh_url(connection_id: str = "plan-1") -> str:
    return reverse("ladder:connection_refresh", args=[connection_id])


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


@pytest.fixture
def sent(hot: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The connection ids of every refresh task handed to Celery (the broker is not called)."""
    calls: list[list[str]] = []

    def record(name: str, *, args: list[Any], **kwargs: Any) -> bool:
        calls.append(args[0])
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    return calls


RefreshPost = Callable[..., Any]  # the test client's response


@pytest.fixture
def post_refresh(django_capture_on_commit_callbacks: Any) -> RefreshPost:
    """POST "Refresh now", running what the view left for the commit (the task is sent then)."""

    def post(client: Client, connection_id: str = "plan-1", **extra: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(refresh_url(connection_id), **extra)

    return post


def upstream_connection(upstream: FakeUpstream, connection_id: str = "c1") -> m.Connection:
    """A Claude Code connection whose quota endpoint is the fake upstream, which counts its calls."""
    connection = m.Connection(
        id=connection_id,
        provider="claude",
        auth_type="oauth",
        base_url=upstream.url_for("claude-oauth", connection_id),
    )
    connection.set_credential(f"token-{connection_id}")
    connection.save()
    return connection


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    plan_setup()
    response = client.get(url())
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_answers_404_for_an_unknown_connection(viewer: Client) -> None:
    assert viewer.get(url("nope")).status_code == 404


def test_it_charts_the_windows_of_the_last_24_hours(viewer: Client) -> None:
    plan_setup()
    now = timezone.now()
    reading_add("plan-1", {"5h": 80, "7d": 90}, at=now - timedelta(hours=6), reset_in=timedelta(hours=2))
    reading_add("plan-1", {"5h": 40, "7d": 85}, at=now - timedelta(hours=1))
    reading_add("plan-1", {"5h": 10}, at=now - timedelta(hours=30))  # outside the chart
    html = viewer.get(url() + "?range=24h").content.decode()
    assert '<svg class="chart-svg"' in html
    assert html.count('<polyline class="series') == 2
    assert "<title>5h</title>" in html
    assert "<title>7d</title>" in html
    assert '<rect class="hband"' in html
    assert "5h reset" in html  # the reset 4 h ago is marked
    assert "; 3 readings" in html


def test_it_says_when_each_window_runs_out(viewer: Client) -> None:
    plan_setup("plan-1", remaining=50)  # its reading joins the period: on the same line
    now = timezone.now()
    for minutes, pct in ((20, 60.0), (10, 55.0), (0, 50.0)):
        at = now - timedelta(minutes=minutes)
        reading_add("plan-1", {"5h": pct, "7d": 90.0}, at=at, reset_in=now + timedelta(hours=3) - at)

    html = viewer.get(url()).content.decode()

    runs_out = (now + timedelta(minutes=96)).astimezone(UTC)
    assert f'<span class="forecast">runs out at {runs_out:%H:%M} UTC, 1h 24m before its reset</span>' in html
    assert html.count('class="forecast"') == 1  # 7d burns nothing: no words


def test_it_marks_cooldowns_on_the_chart(viewer: Client) -> None:
    plan_setup()
    now = timezone.now()
    m.FailureEvent.objects.create(
        connection_id="plan-1",
        status=429,
        classification="quota_exhausted",
        window="5h",
        cooldown_until=now - timedelta(hours=1),
        observed_at=now - timedelta(hours=2),
        detail="plan exhausted",
    )
    html = viewer.get(url() + "?range=6h").content.decode()
    assert '<rect class="cooldown"' in html
    assert "quota_exhausted" in html
    assert "plan exhausted" in html


def test_it_lists_recent_usage_and_its_cost(viewer: Client) -> None:
    plan_setup()
    m.UsageEvent.objects.create(
        request_id="u1",
        connection_id="plan-1",
        model="acme-coder",
        input_tokens=1000,
        output_tokens=200,
        rung=0,
        cost_usd=Decimal("0.0123"),
        occurred_at=timezone.now(),
    )
    html = viewer.get(url()).content.decode()
    assert "1 request, $0.0123" in html
    assert "1000 / 200" in html
    assert "subscription" in html


def test_it_has_empty_states(viewer: Client) -> None:
    plan_setup()
    m.QuotaReading.objects.all().delete()
    html = viewer.get(url()).content.decode()
    assert "No reading in the last 24 h." in html
    assert "No failure recorded." in html
    assert "No usage recorded." in html


def test_it_serves_only_the_detail_partial_to_htmx(viewer: Client) -> None:
    plan_setup()
    html = viewer.get(url(), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="detail"')
    assert "<html" not in html


def test_it_hides_the_refresh_button_from_viewers(viewer: Client) -> None:
    plan_setup()
    assert "Refresh now" not in viewer.get(url()).content.decode()


def test_it_refuses_a_refresh_by_a_viewer(
    viewer: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    assert post_refresh(viewer).status_code == 403
    assert sent == []
    assert not refresh_is_pending(connection_id="plan-1")


def test_it_refuses_a_refresh_by_anonymous_visitors(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    assert post_refresh(client).status_code == 302
    assert sent == []
    assert not refresh_is_pending(connection_id="plan-1")


def test_it_requests_a_refresh_for_staff(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    client.force_login(editor_create())
    assert "Refresh now" in client.get(url()).content.decode()
    response = post_refresh(client)
    assert response.status_code == 302
    assert sent == [["plan-1"]]
    html = client.get(url()).content.decode()
    assert "Refresh requested: a worker polls this connection shortly." in html
    assert 'id="refresh-pending"' in html


def test_it_requests_a_refresh_in_place_for_htmx(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    client.force_login(editor_create())
    html = post_refresh(client, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="detail"')
    assert "Refresh requested: a worker polls this connection shortly." in html
    assert 'id="refresh-pending"' in html
    assert sent == [["plan-1"]]


def test_it_answers_without_polling_upstream_and_a_worker_run_lands_the_reading(
    client: Client,
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    sent: list[list[str]],
    post_refresh: RefreshPost,
) -> None:
    upstream_connection(upstream)
    client.force_login(editor_create())

    html = post_refresh(client, "c1", HTTP_HX_REQUEST="true").content.decode()

    assert control.count("claude-oauth") == 0
    assert not m.QuotaReading.objects.exists()
    assert sent == [["c1"]]
    assert 'id="refresh-pending"' in html
    assert "Reading: none yet" in html

    result = tasks.refresh_connections.apply(args=(sent[0],)).get()

    assert result["outcomes"] == {"ok": 1}
    assert control.count("claude-oauth") == 1
    assert set(readings_latest()) == {"c1"}
    html = client.get(url("c1"), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="refresh-pending"' not in html
    assert "source poll" in html
    assert "Window <b>5h</b>" in html


def test_it_requests_a_pending_refresh_only_once(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    client.force_login(editor_create())
    post_refresh(client, HTTP_HX_REQUEST="true")
    html = post_refresh(client, HTTP_HX_REQUEST="true").content.decode()
    assert "A refresh of this connection is already pending." in html
    assert 'id="refresh-pending"' in html
    assert sent == [["plan-1"]]


def test_it_says_so_when_redis_cannot_take_the_request(
    client: Client, settings: Any, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    client.force_login(editor_create())
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    redis_forget_outages()
    html = post_refresh(client, HTTP_HX_REQUEST="true").content.decode()
    assert "The refresh could not be requested (Redis is unavailable)" in html
    assert 'id="refresh-pending"' not in html
    assert sent == []


def test_it_shows_no_pending_refresh_to_a_viewer_when_none_was_asked(
    viewer: Client, hot: redis.Redis
) -> None:
    plan_setup()
    assert 'id="refresh-pending"' not in viewer.get(url()).content.decode()


def test_it_refuses_a_refresh_without_a_csrf_token(sent: list[list[str]], post_refresh: RefreshPost) -> None:
    plan_setup()
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor_create())
    assert post_refresh(client).status_code == 403
    assert sent == []
    assert not refresh_is_pending(connection_id="plan-1")


def test_it_refuses_a_refresh_by_get(client: Client, sent: list[list[str]]) -> None:
    plan_setup()
    client.force_login(editor_create())
    assert client.get(refresh_url()).status_code == 405
    assert sent == []


def test_it_shows_the_latest_reading_source(viewer: Client) -> None:
    plan_setup()
    reading_add("plan-1", {"5h": 55}, source="headers")
    assert "source headers" in viewer.get(url()).content.decode()


def test_it_shows_the_connection_pool_state_with_reasons(viewer: Client) -> None:
    plan_setup(remaining=1)
    html = viewer.get(url()).content.decode()
    assert "auto/subscription</span> out of pool: quota exhausted (at or below the exit cutoff)" in html


def test_it_lands_a_no_js_refresh_on_the_connection_page(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    client.force_login(editor_create())

    response = post_refresh(client, follow=True)

    assert response.redirect_chain == [(url(), 302)]
    assert response.status_code == 200
    html = response.content.decode()
    assert "Refresh requested: a worker polls this connection shortly." in html
    assert 'id="refresh-pending"' in html
    assert sent == [["plan-1"]]


# --- the reserve (DESIGN L6 Reserve) --------------------------------------------------------------------


def reserve_url(connection_id: str = "plan-1") -> str:
    return reverse("ladder:connection_reserve", args=[connection_id])


def test_it_sets_a_reserve_and_holds_the_plan_back_in_plain_words(client: Client) -> None:
    plan_setup(remaining=15)
    client.force_login(editor_create())
    assert 'name="reserve_pct"' in client.get(url()).content.decode()
    before = state_version_get()

    response = client.post(reserve_url(), {"reserve_pct": "20"})

    assert response.status_code == 302
    assert m.Connection.objects.get(pk="plan-1").reserve_pct == 20.0
    assert state_version_get() > before
    html = client.get(url()).content.decode()
    assert "Reserve set: 20 % of every window is kept for your own use." in html
    assert "out of pool: held back: 20 % kept for your own use" in html
    assert 'class="reserve"' in html  # the reserve's own band on the window bar


def test_it_clears_the_reserve_in_place_for_htmx(client: Client) -> None:
    plan_setup(remaining=15)
    m.Connection.objects.filter(pk="plan-1").update(reserve_pct=20)
    client.force_login(editor_create())

    response = client.post(reserve_url(), {"reserve_pct": ""}, HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    assert m.Connection.objects.get(pk="plan-1").reserve_pct is None
    html = response.content.decode()
    assert 'id="detail"' in html
    assert "<html" not in html
    assert "No reserve" in html
    assert "held back" not in html


@pytest.mark.parametrize("value", ["120", "-1", "twenty", "nan"])
def test_it_refuses_a_bad_reserve_naming_the_field(client: Client, value: str) -> None:
    plan_setup()
    m.Connection.objects.filter(pk="plan-1").update(reserve_pct=10)
    client.force_login(editor_create())

    client.post(reserve_url(), {"reserve_pct": value})

    assert m.Connection.objects.get(pk="plan-1").reserve_pct == 10.0
    assert "reserve_pct must be a number from 0 to 100" in client.get(url()).content.decode()


def test_it_refuses_a_reserve_by_a_viewer(viewer: Client) -> None:
    plan_setup()
    assert 'name="reserve_pct"' not in viewer.get(url()).content.decode()
    assert viewer.post(reserve_url(), {"reserve_pct": "20"}).status_code == 403
    assert m.Connection.objects.get(pk="plan-1").reserve_pct is None


def test_it_says_when_the_minimum_poll_interval_holds_a_refresh_back(
    client: Client, sent: list[list[str]], post_refresh: RefreshPost
) -> None:
    plan_setup()
    polled = timezone.now() - timedelta(seconds=10)
    m.Connection.objects.filter(pk="plan-1").update(min_poll_interval_s=300, last_polled_at=polled)
    client.force_login(editor_create())

    post_refresh(client)

    assert sent == []
    html = client.get(url()).content.decode()
    assert "Not polled yet: this connection is polled at most every 300 s" in html
    assert f"the next poll may come at {polled + timedelta(seconds=300):%H:%M:%S} UTC" in html


def test_it_never_shows_a_key_that_the_upstream_quoted_back(
    viewer: Client, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    key = "sk-ant-oat01-QuotedBackByTheUpstream-0123456789"
    connection = upstream_connection(upstream)
    connection.set_credential(key)
    connection.save()
    control.error("claude-oauth", "echo_key", connection="c1", times=1)
    control.error("claude-oauth", "echo_key_suffix", connection="c2", times=1)
    second = upstream_connection(upstream, "c2")
    second.set_credential(key)
    second.save()
    now = timezone.now()
    assert connections_claim(connection_ids=["c1", "c2"], now=now, lease_s=60) == ["c1", "c2"]
    connections_refresh_many(["c1", "c2"], claim_until=claim_deadline(now, 60))

    for cid in ("c1", "c2"):
        html = viewer.get(url(cid)).content.decode()
        assert "Incorrect API key provided: " in html  # the message is shown, the key is not
        assert key[-12:] not in html
