from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from ladder.domain import resolution_to_dict, resolve
from ladder.selectors.snapshot import snapshot_load
from tests.dashboard.factories import (
    catalog_row,
    connection_create,
    model_row,
    plan_setup,
    reading_add,
    user_create,
)

pytestmark = pytest.mark.django_db
URL = reverse("ladder:pool_preview")


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL, {"model": "auto/thrifty"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_lists_the_pool_in_order_with_its_connections(viewer: Client) -> None:
    plan_setup("plan-1")
    model_row("acme", "acme-cheap", price="0.5")
    html = viewer.get(URL, {"model": "auto/thrifty"}).content.decode()
    pool = html[html.index('id="pool-entries"') : html.index("</ol>")]
    # rung 0 (subscription) first, by incoming candidate order inside a rung.
    assert pool.index("acme/acme-coder") < pool.index("acme/acme-cheap")
    assert 'data-rung="0"' in pool
    assert ">plan-1</a>" in pool


def test_it_equals_the_domain_answer_on_the_same_snapshot(viewer: Client) -> None:
    plan_setup("plan-1")
    connection_create("plan-2", position=1)
    reading_add("plan-2", {"5h": 1})
    html = viewer.get(URL, {"model": "auto/subscription"}).content.decode()
    now = timezone.now()
    expected = resolution_to_dict(resolve(snapshot_load(now=now), "auto/subscription", None, now))
    assert [e["allowed_connection_ids"] for e in expected["pool"]] == [["plan-1"]]
    for excluded in expected["excluded"]:
        assert f'data-connection="{excluded["connection_id"]}" data-reason="{excluded["reason"]}"' in html
    assert "quota exhausted (at or below the exit cutoff)" in html


def test_it_explains_every_excluded_connection_in_plain_words(viewer: Client) -> None:
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    model_row("acme", "acme-coder")
    connection_create("no-reading")
    connection_create("off", position=1, enabled=False, disabled_reason="auth_failed")
    html = viewer.get(URL, {"model": "auto/subscription"}).content.decode()
    assert 'data-connection="no-reading" data-reason="no_reading"' in html
    assert "no quota reading yet" in html
    assert 'data-connection="off" data-reason="disabled"' in html
    assert "the connection is disabled" in html


def test_it_shows_the_empty_answer_and_when_to_retry(viewer: Client) -> None:
    plan_setup("plan-1", remaining=1)
    html = viewer.get(URL, {"model": "auto/subscription"}).content.decode()
    assert 'id="empty-pool"' in html
    assert "no_verified_subscription_quota" in html
    assert "Retry at <time" in html


def test_it_previews_a_typed_category_id(viewer: Client) -> None:
    plan_setup("plan-1")
    model_row("acme", "acme-vision", categories=("vision",))
    html = viewer.get(URL, {"model": "auto/vision:thrifty"}).content.decode()
    assert "acme/acme-vision" in html
    assert "acme/acme-coder" not in html


def test_it_refuses_an_id_outside_the_grammar_in_place(viewer: Client) -> None:
    response = viewer.get(URL, {"model": "auto/coding:warp"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'role="alert"' in html
    assert "unknown tier &#x27;warp&#x27;" in html


def test_it_defaults_to_auto_subscription(viewer: Client) -> None:
    html = viewer.get(URL).content.decode()
    assert 'value="auto/subscription"' in html
    assert '<section id="pool" data-auto-id="auto/subscription">' in html


def test_it_serves_only_the_pool_partial_to_htmx(viewer: Client) -> None:
    plan_setup("plan-1")
    html = viewer.get(URL, {"model": "auto/thrifty"}, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="pool" data-auto-id="auto/thrifty">')
    assert "<html" not in html


def test_it_shows_a_cooling_down_connection_as_excluded(viewer: Client) -> None:
    plan_setup("plan-1")
    m.Connection.objects.filter(pk="plan-1").update(cooldown_until=timezone.now() + timedelta(minutes=5))
    html = viewer.get(URL, {"model": "auto/thrifty"}).content.decode()
    assert 'data-reason="cooling_down"' in html
    assert "<b>plan-1</b>" in html


def test_it_explains_a_reserve_in_plain_words_with_its_size(viewer: Client) -> None:
    plan_setup("plan-1", remaining=19)
    m.Connection.objects.filter(pk="plan-1").update(reserve_pct=20)

    html = viewer.get(URL, {"model": "auto/subscription"}).content.decode()

    assert 'data-connection="plan-1" data-reason="reserve_reached"' in html
    assert "held back: 20 % kept for your own use" in html
