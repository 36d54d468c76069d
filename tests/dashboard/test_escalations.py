from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from tests.dashboard.factories import plan_setup, user_create

pytestmark = pytest.mark.django_db
URL = reverse("ladder:escalations_page")
CLIMB_WHY = "subscription: quota_exhausted on plan-1 (window 5h at 0.0% ≤ cutoff 2%)"


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


def log(
    auto_id: str, from_rung: int | None, to_rung: int | None, kind: str, minutes_ago: int, why: str = ""
) -> None:
    m.EscalationEvent.objects.create(
        auto_id=auto_id,
        from_rung=from_rung,
        to_rung=to_rung,
        kind=kind,
        why=why,
        occurred_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def entries(html: str) -> list[tuple[str, str]]:
    """(auto id, kind) of each timeline entry, in page order."""
    found = []
    for chunk in html.split('<li class="event event-')[1:]:
        auto_id = chunk.split('data-auto-id="', 1)[1].split('"', 1)[0]
        kind = chunk.split('data-kind="', 1)[1].split('"', 1)[0]
        found.append((auto_id, kind))
    return found


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_shows_the_log_newest_first_with_rungs_and_reasons(viewer: Client) -> None:
    log("auto/thrifty", 0, 3, "up", 30, CLIMB_WHY)
    log(
        "auto/thrifty",
        3,
        None,
        "empty",
        20,
        "auto/thrifty: every rung is exhausted, disabled or cooling down",
    )
    log("auto/thrifty", None, 0, "down", 10, "subscription serves again: claude/claude-sonnet-4-5 via plan-1")

    response = viewer.get(URL)

    html = response.content.decode()
    assert response.status_code == 200
    assert entries(html) == [("auto/thrifty", "down"), ("auto/thrifty", "empty"), ("auto/thrifty", "up")]
    assert (
        'climbed: <span class="tag rung-0">0 subscription</span> → <span class="tag rung-3">3 cheap</span>'
        in html
    )
    empty_pool = '<span class="tag rung-empty">empty pool</span>'
    assert f'turned empty: <span class="tag rung-3">3 cheap</span> → {empty_pool}' in html
    assert "came back down" in html
    assert "subscription: quota_exhausted on plan-1 (window 5h at 0.0% ≤ cutoff 2%)" in html
    assert "30m ago" in html
    assert f'href="{reverse("ladder:pool_preview")}?model=auto%2Fthrifty"' in html
    assert f'href="{URL}"' in viewer.get(reverse("ladder:overview")).content.decode()  # in the navigation


def test_it_filters_by_auto_id(viewer: Client) -> None:
    log("auto/thrifty", 0, 3, "up", 30)
    log("auto/subscription", 0, None, "empty", 20)

    html = viewer.get(URL, {"model": "auto/subscription"}).content.decode()

    assert entries(html) == [("auto/subscription", "empty")]
    assert '<b class="current" aria-current="page">auto/subscription</b>' in html
    assert f'<a href="{URL}?model=auto%2Fthrifty">auto/thrifty</a>' in html


def test_it_refuses_a_filter_that_is_no_auto_id(viewer: Client) -> None:
    response = viewer.get(URL, {"model": "gpt-4o"})

    assert response.status_code == 400
    assert "gpt-4o: not an auto id" in response.content.decode()


def test_it_says_so_when_nothing_was_logged(viewer: Client) -> None:
    html = viewer.get(URL).content.decode()

    assert entries(html) == []
    assert "No escalation yet" in html


def test_it_serves_the_timeline_alone_to_htmx_polls(viewer: Client) -> None:
    log("auto/thrifty", 0, 3, "up", 5)

    response = viewer.get(URL, headers={"HX-Request": "true"})

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="timeline" data-poll')
    assert "<html" not in html
    assert entries(html) == [("auto/thrifty", "up")]
    assert "HX-Request" in response["Vary"]


def test_it_keeps_scripts_and_styles_out_of_the_page(viewer: Client) -> None:
    log("auto/thrifty", 0, 3, "up", 5, '<script>alert("x")</script>')

    html = viewer.get(URL).content.decode()

    assert "<script>alert" not in html
    assert "&lt;script&gt;alert" in html
    assert " style=" not in html
    assert "<style" not in html


def test_it_costs_the_same_queries_whatever_the_length_of_the_log(
    viewer: Client, django_assert_max_num_queries: Any
) -> None:
    for index in range(150):
        log("auto/thrifty" if index % 2 else "auto/subscription", 0, 3, "up", index)

    # session, user, the events, the auto ids
    with django_assert_max_num_queries(4):
        html = viewer.get(URL).content.decode()
    assert len(entries(html)) == 100
    assert "the newest 100" in html


def test_it_logs_no_dashboard_preview(viewer: Client) -> None:
    plan_setup("plan-1", remaining=0.0)
    viewer.get(reverse("ladder:pool_preview"), {"model": "auto/thrifty"})
    plan_setup("plan-2", remaining=50.0)
    viewer.get(reverse("ladder:pool_preview"), {"model": "auto/thrifty"})

    assert not m.EscalationEvent.objects.exists()
    assert not m.EscalationState.objects.exists()
