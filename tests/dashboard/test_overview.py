from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from ladder import models as m
from ladder.domain.types import Reading
from ladder.providers.openrouter import parse_key
from ladder.services.readings import reading_record
from tests.dashboard.factories import (
    catalog_row,
    connection_create,
    model_row,
    plan_setup,
    reading_add,
    user_create,
)

pytestmark = pytest.mark.django_db
URL = reverse("ladder:overview")


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


def card_html(html: str, connection_id: str, rung: int) -> str:
    start = html.index(f'id="card-{connection_id}-{rung}"')
    return html[start : html.index("</article>", start)]


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ladder:login"))


def test_it_shows_a_plan_connection_on_rung_0_in_both_pools(viewer: Client) -> None:
    plan_setup("plan-1", remaining=60)
    html = viewer.get(URL).content.decode()
    card = card_html(html, "plan-1", 0)
    assert "acme · oauth" in card
    assert "billing <b>subscription</b>" in card
    assert "overage <b>hard-stop</b>" in card
    assert 'data-grouping="auto/subscription"><span class="g">auto/subscription</span> in pool' in card
    assert "60% left" in card
    assert "source poll" in card


def test_it_says_when_a_burning_window_runs_out_and_nothing_for_a_steady_one(viewer: Client) -> None:
    """5 %/10 min from 50 % to the 2 % cutoff: 96 min, 84 min before the reset 3 h away."""
    plan_setup("plan-1", remaining=50)  # its reading joins the period: on the same line
    now = timezone.now()
    for minutes, pct in ((20, 60.0), (10, 55.0), (0, 50.0)):
        at = now - timedelta(minutes=minutes)
        reading_add("plan-1", {"5h": pct, "7d": 90.0}, at=at, reset_in=now + timedelta(hours=3) - at)

    card = card_html(viewer.get(URL).content.decode(), "plan-1", 0)

    runs_out = (now + timedelta(minutes=96)).astimezone(UTC)
    assert card.count('class="forecast"') == 1
    assert f'<span class="forecast">runs out at {runs_out:%H:%M} UTC, 1h 24m before its reset</span>' in card


def test_it_draws_the_hysteresis_band_on_each_window_bar(viewer: Client) -> None:
    plan_setup("plan-1", remaining=3.5)
    card = card_html(viewer.get(URL).content.decode(), "plan-1", 0)
    # default cutoff 2 %, floor 5 %: the band spans x=2 … 5 of the 0–100 bar.
    assert '<rect class="band" x="2.00" y="0" width="3.00"' in card
    assert '<line class="cutoff" x1="2.00"' in card
    assert '<line class="floor" x1="5.00"' in card
    assert '<rect class="fill" x="0" y="0" width="3.50"' in card


def test_it_shows_an_exhausted_connection_out_of_the_pool_with_its_reason(viewer: Client) -> None:
    plan_setup("plan-1", remaining=1)
    card = card_html(viewer.get(URL).content.decode(), "plan-1", 0)
    assert "auto/thrifty</span> out of pool: quota exhausted" in card
    assert "latched" in card


def test_it_shows_a_cooldown_with_its_end(viewer: Client) -> None:
    plan_setup("plan-1")
    until = timezone.now() + timedelta(minutes=30)
    m.Connection.objects.filter(pk="plan-1").update(cooldown_until=until)
    card = card_html(viewer.get(URL).content.decode(), "plan-1", 0)
    assert f'Cooling down until <time datetime="{until.isoformat()}">{until:%H:%M:%S} UTC</time>' in card
    assert "cooling down after a failure" in card


def test_it_puts_an_uncurated_provider_on_a_metered_rung_and_flags_it(viewer: Client) -> None:
    model_row("mystery", "mystery-1", price="0.5")
    connection_create("mystery-1", provider="mystery", auth_type="apikey")
    html = viewer.get(URL).content.decode()
    card = card_html(html, "mystery-1", 3)
    assert "uncurated" in card
    assert "Uncurated (treated as metered): mystery/apikey" in html


def test_it_shows_rung_budgets_as_spent_over_budget(viewer: Client) -> None:
    config = m.LadderConfiguration.load()
    config.rung_budget_usd = {"cheap": 10.0, "premium": 0}
    config.save()
    m.UsageEvent.objects.create(
        request_id="r1", budget_rung="cheap", cost_usd="2.5", occurred_at=timezone.now()
    )
    html = viewer.get(URL).content.decode()
    cheap = html[html.index('id="rung-3"') : html.index('id="rung-4"')]
    assert "$2.50 / $10.00" in cheap
    assert 'width="25.0"' in cheap
    assert "Period ends" in cheap
    premium = html[html.index('id="rung-4"') :]
    assert "Disabled: budget $0." in premium


def test_it_says_no_budget_plainly(viewer: Client) -> None:
    html = viewer.get(URL).content.decode()
    assert "No budget: this rung is not gated." in html


def test_it_lists_the_advertised_auto_ids_with_preview_links(viewer: Client) -> None:
    model_row("acme", "acme-coder", categories=("coding",))
    html = viewer.get(URL).content.decode()
    assert f'href="{reverse("ladder:pool_preview")}?model=auto%2Fsubscription"' in html
    assert "auto/thrifty" in html
    assert "auto/coding:subscription" in html


def test_it_has_an_empty_state_without_connections(viewer: Client) -> None:
    m.Connection.objects.all().delete()
    html = viewer.get(URL).content.decode()
    assert "No connections yet." in html


def test_it_serves_only_the_polling_partial_to_htmx(viewer: Client) -> None:
    plan_setup("plan-1")
    response = viewer.get(URL, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="ladder"')
    assert "<html" not in html
    assert 'hx-trigger="every 5000ms, ladder-visible"' in html
    assert "plan-1" in html
    assert "HX-Request" in response["Vary"]


def test_it_loads_htmx_from_our_static_files_never_a_cdn(viewer: Client) -> None:
    html = viewer.get(URL).content.decode()
    assert 'src="/static/vendor/htmx.min.js"' in html
    assert "unpkg" not in html
    assert "cdn" not in html.lower()
    assert "<style" not in html
    assert " style=" not in html
    assert '"allowEval": false' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


@pytest.mark.parametrize("count", [5, 50])
def test_it_renders_with_a_constant_number_of_queries(
    viewer: Client, django_assert_max_num_queries: DjangoAssertNumQueries, count: int
) -> None:
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    model_row("acme", "acme-coder")
    for index in range(count):
        connection_create(f"c{index}", position=index)
        reading_add(f"c{index}", {"5h": 50, "7d": 80})
    with django_assert_max_num_queries(12):
        response = viewer.get(URL)
    assert response.content.decode().count('data-connection="c') >= count


def test_it_rejects_writes(viewer: Client) -> None:
    assert viewer.post(URL).status_code == 405


def test_it_sends_an_htmx_poll_without_a_session_to_the_login_page_whole(client: Client) -> None:
    response = client.get(URL, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/")
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"{reverse('ladder:login')}?next=%2F"


def test_it_shows_the_openrouter_key_cap_scope_as_written_never_its_globs(viewer: Client) -> None:
    catalog_row("openrouter", "apikey", "metered", "meters-to-paid")
    model_row("openrouter", "meta/llama:free", price="0")
    connection_create("or-key", provider="openrouter", auth_type="apikey")
    now = timezone.now()
    body = {"data": {"limit": 10, "limit_remaining": 4, "limit_reset": "monthly"}}
    key_cap = parse_key(body, now).windows
    reading_record(connection_id="or-key", reading=Reading(fetched_at=now, windows=key_cap), now=now)

    html = viewer.get(URL).content.decode()
    card = card_html(html, "or-key", 2)
    assert "key-limit" in card
    assert "every model except *:free" in card
    assert "[!" not in html
    page = viewer.get(reverse("ladder:connection_page", args=["or-key"])).content.decode()
    assert "every model except *:free" in page
    assert "[!" not in page
