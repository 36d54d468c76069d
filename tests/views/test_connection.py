from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from ladder.services.refresh import RefreshSummary
from tests.views.factories import editor_create, plan_setup, reading_add, user_create

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
def refreshed(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []

    def fake_run(
        connection_ids: list[str], *, lease_s: float, deadline_s: float | None = None
    ) -> RefreshSummary:
        calls.append(list(connection_ids))
        summary = RefreshSummary(claimed=1)
        summary.outcomes["ok"] += 1
        return summary

    monkeypatch.setattr("ladder.views.refresh_connections_run", fake_run)
    return calls


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
    html = viewer.get(url()).content.decode()
    assert '<svg class="chart-svg"' in html
    assert html.count('<polyline class="series') == 2
    assert "<title>5h</title>" in html
    assert "<title>7d</title>" in html
    assert '<rect class="hband"' in html
    assert "5h reset" in html  # the reset 4 h ago is marked
    assert "; 3 readings" in html


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
    html = viewer.get(url()).content.decode()
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


def test_it_refuses_a_refresh_by_a_viewer(viewer: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    assert viewer.post(refresh_url()).status_code == 403
    assert refreshed == []


def test_it_refuses_a_refresh_by_anonymous_visitors(client: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    assert client.post(refresh_url()).status_code == 302
    assert refreshed == []


def test_it_refreshes_now_for_staff(client: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    client.force_login(editor_create())
    assert "Refresh now" in client.get(url()).content.decode()
    response = client.post(refresh_url())
    assert response.status_code == 302
    assert refreshed == [["plan-1"]]
    assert "Refreshed: ok." in client.get(url()).content.decode()


def test_it_refreshes_in_place_for_htmx(client: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    client.force_login(editor_create())
    html = client.post(refresh_url(), HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="detail"')
    assert "Refreshed: ok." in html


def test_it_refuses_a_refresh_without_a_csrf_token(refreshed: list[list[str]]) -> None:
    plan_setup()
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor_create())
    assert client.post(refresh_url()).status_code == 403
    assert refreshed == []


def test_it_refuses_a_refresh_by_get(client: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    client.force_login(editor_create())
    assert client.get(refresh_url()).status_code == 405


def test_it_shows_the_latest_reading_source(viewer: Client) -> None:
    plan_setup()
    reading_add("plan-1", {"5h": 55}, source="headers")
    assert "source headers" in viewer.get(url()).content.decode()


def test_it_shows_the_connection_pool_state_with_reasons(viewer: Client) -> None:
    plan_setup(remaining=1)
    html = viewer.get(url()).content.decode()
    assert "auto/subscription</span> out of pool: quota exhausted (at or below the exit cutoff)" in html


def test_it_lands_a_no_js_refresh_on_the_connection_page(client: Client, refreshed: list[list[str]]) -> None:
    plan_setup()
    client.force_login(editor_create())

    response = client.post(refresh_url(), follow=True)

    assert response.redirect_chain == [(url(), 302)]
    assert response.status_code == 200
    assert "Refreshed: ok." in response.content.decode()
