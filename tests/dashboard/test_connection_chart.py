"""The connection chart's range selector, axes and forecast line (issue 20, item 4)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ladder import models as m
from ladder.dashboard.chart import CHART_RANGES, chart_build, chart_range_auto, chart_range_error
from ladder.domain.types import LadderConfig
from ladder.selectors.history import WindowPoint
from tests.dashboard.factories import plan_setup, reading_add, user_create

pytestmark = pytest.mark.django_db


def url(connection_id: str = "plan-1") -> str:
    return reverse("ladder:connection_page", args=[connection_id])


@pytest.fixture
def viewer(client: Client) -> Client:
    client.force_login(user_create("viewer"))
    return client


def burning(connection_id: str = "plan-1", *, minutes: tuple[int, ...] = (30, 20, 10, 0)) -> datetime:
    """Readings of one 5h window losing 5 % every 10 minutes, one shared reset: a forecast in 1h 40m
    (50 % at now, cutoff 2 %: 48 % at 0.5 %/min = 96 min)."""
    now = timezone.now()
    reset = now + timedelta(hours=3)
    for ago in minutes:
        at = now - timedelta(minutes=ago)
        reading_add(connection_id, {"5h": 50.0 + ago / 2}, at=at, reset_in=reset - at)
    return now


def forecast_line(html: str) -> dict[str, float]:
    match = re.search(r'<line class="forecast-line[^"]*" data-window="5h" ([^>]*)>', html)
    assert match, "no forecast line"
    return {k: float(v) for k, v in re.findall(r'(x1|y1|x2|y2)="([-\d.]+)"', match.group(1))}


def test_it_picks_the_smallest_range_that_holds_the_readings(viewer: Client) -> None:
    plan_setup("plan-1", remaining=50)
    burning()
    html = viewer.get(url()).content.decode()
    assert "<h2>Last 1 h</h2>" in html
    assert 'data-range="1h" class="chosen" aria-current="true"' in html
    # The polling keeps the automatic choice: no range in its URL.
    assert f'hx-get="{url()}" hx-trigger="every' in html


def test_it_widens_the_automatic_range_for_older_readings(viewer: Client) -> None:
    plan_setup()
    reading_add("plan-1", {"5h": 70}, at=timezone.now() - timedelta(hours=5))
    assert "<h2>Last 6 h</h2>" in viewer.get(url()).content.decode()


def test_it_charts_the_chosen_range_and_keeps_it_when_polling(viewer: Client) -> None:
    plan_setup()
    reading_add("plan-1", {"5h": 70}, at=timezone.now() - timedelta(days=3))
    html = viewer.get(url() + "?range=7d").content.decode()
    assert "<h2>Last 7 d</h2>" in html
    assert "; 2 readings" in html
    assert f'hx-get="{url()}?range=7d" hx-trigger="every' in html
    for key in CHART_RANGES:
        assert f'href="{url()}?range={key}" hx-get="{url()}?range={key}"' in html


@pytest.mark.parametrize("bad", ["2h", "", "7D", "x" * 300])
def test_it_answers_400_naming_the_range_parameter(viewer: Client, bad: str) -> None:
    plan_setup()
    response = viewer.get(url(), {"range": bad})
    assert response.status_code == 400
    html = response.content.decode()
    assert "range must be one of 1h, 6h, 24h, 7d" in html
    assert '<svg class="chart-svg"' in html  # the page still renders, on its automatic range


def test_it_labels_both_axes(viewer: Client) -> None:
    plan_setup()
    html = viewer.get(url() + "?range=6h").content.decode()
    for pct in ("0%", "25%", "50%", "75%", "100%"):
        assert f'dy="4">{pct}</text>' in html
    assert ">time (UTC)</text>" in html
    assert ">remaining %</text>" in html
    ticks = re.findall(r'<text class="tick" x="[\d.]+" y="216">(\d\d:\d\d)</text>', html)
    assert len(ticks) >= 6  # hourly over 6 h and the forecast room after now
    assert all(t.endswith(":00") for t in ticks)


def test_it_draws_the_forecast_down_to_the_cutoff(viewer: Client) -> None:
    plan_setup("plan-1", remaining=50)
    burning()
    html = viewer.get(url() + "?range=24h").content.decode()
    line = forecast_line(html)
    cutoff = re.search(r'<line class="cutoff" x1="0" x2="720" y1="([\d.]+)"', html)
    assert cutoff
    assert line["y2"] == float(cutoff.group(1)) == 196.0  # the 2 % cutoff
    assert line["y1"] == 100.0  # from the latest reading, 50 %
    # 96 minutes after now, on a plot of 24 h back and 6 h ahead.
    assert line["x2"] == pytest.approx(720 * (24 * 60 + 96) / (30 * 60), abs=1.0)
    assert line["x1"] == pytest.approx(720 * 24 / 30, abs=1.0)
    assert "5h runs out at" in html
    assert "forecast: down to the cutoff" in html


def test_it_leaves_out_a_forecast_beyond_the_range(viewer: Client) -> None:
    plan_setup("plan-1", remaining=50)
    burning()
    html = viewer.get(url() + "?range=6h").content.decode()  # 90 minutes ahead: the 96 do not fit
    assert "forecast-line" not in html
    assert 'class="forecast">runs out at' in html  # the words still say it


def test_it_draws_no_forecast_for_a_window_that_burns_nothing(viewer: Client) -> None:
    plan_setup("plan-1", remaining=50)
    burning(minutes=(0,))
    assert "forecast-line" not in viewer.get(url()).content.decode()


def test_it_reads_the_chart_in_a_constant_number_of_queries(
    viewer: Client, django_assert_max_num_queries: object
) -> None:
    plan_setup()
    now = timezone.now()
    for minutes in range(0, 300, 5):
        reading_add("plan-1", {"5h": 90 - minutes / 10, "7d": 95}, at=now - timedelta(minutes=minutes))
    m.FailureEvent.objects.create(
        connection_id="plan-1",
        status=429,
        classification="quota_exhausted",
        window="5h",
        cooldown_until=now - timedelta(minutes=30),
        observed_at=now - timedelta(hours=1),
    )
    with django_assert_max_num_queries(30):  # type: ignore[operator]
        html = viewer.get(url()).content.decode()
    assert "; 61 readings" in html
    assert '<rect class="cooldown"' in html


# --- the chart builder itself ------------------------------------------------------------------

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
LIMITS = LadderConfig()


@pytest.mark.parametrize(
    ("oldest", "expected"),
    [
        (None, "24h"),
        (NOW - timedelta(minutes=5), "1h"),
        (NOW - timedelta(hours=1), "1h"),
        (NOW - timedelta(hours=1, seconds=1), "6h"),
        (NOW - timedelta(hours=23), "24h"),
        (NOW - timedelta(days=3), "24h"),
    ],
)
def test_it_chooses_the_automatic_range(oldest: datetime | None, expected: str) -> None:
    assert chart_range_auto(oldest, NOW) == expected


def test_it_accepts_only_the_offered_ranges() -> None:
    assert chart_range_error(None) == ""
    assert all(chart_range_error(key) == "" for key in CHART_RANGES)
    assert chart_range_error("30m") == "range must be one of 1h, 6h, 24h, 7d; got '30m'."


def test_it_thins_a_week_of_minute_readings_and_keeps_every_dip() -> None:
    points = [
        WindowPoint(i, NOW - timedelta(minutes=i), "7d", 0.0 if i == 5000 else 80.0, None)
        for i in range(7 * 24 * 60, -1, -1)
    ]
    chart = chart_build(points, [], None, LIMITS, NOW, range_key="7d", range_chosen=True)
    (line,) = chart.lines
    drawn = line.points.split()
    assert len(drawn) <= 2 * 720 + 1
    assert any(p.endswith(",200") for p in drawn)  # the reading at 0 %
    assert line.last_x == chart.now_x
    assert chart.readings == 7 * 24 * 60 + 1
