"""The connection chart in Chromium: the range selector swaps the chart in place (and keeps working
without JS), and the forecast is drawn as a dashed line down to the cutoff (issue 20, item 4).
Screenshots go to artifacts/chart-*.png."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import wait
from tests.dashboard.factories import (
    PASSWORD,
    catalog_row,
    connection_create,
    model_row,
    reading_add,
    user_create,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Read in one script call: the polling swaps the chart out under any element handle kept across calls.
CHART_JS = """
const chart = document.getElementById("chart");
if (!chart) return null;
const line = chart.querySelector("line.forecast-line");
const cutoff = chart.querySelector("line.cutoff");
const box = line ? line.getBoundingClientRect() : null;
return {
  range: chart.dataset.range,
  title: chart.querySelector("h2").innerText,
  chosen: (chart.querySelector("nav.ranges a.chosen") || {}).innerText || "",
  ticks: Array.from(chart.querySelectorAll("text.tick")).map(t => t.textContent),
  yticks: Array.from(chart.querySelectorAll("text.ytick")).map(t => t.textContent),
  axes: Array.from(chart.querySelectorAll("text.axis")).map(t => t.textContent),
  series: chart.querySelectorAll("polyline.series").length,
  forecast: line ? {
    y1: Number(line.getAttribute("y1")), x1: Number(line.getAttribute("x1")),
    x2: Number(line.getAttribute("x2")), y2: Number(line.getAttribute("y2")),
    dash: getComputedStyle(line).strokeDasharray, width: box.width, height: box.height,
    title: line.querySelector("title").textContent,
  } : null,
  dot: (() => {
    const d = chart.querySelector("circle.dot");
    return d ? [Number(d.getAttribute("cx")), Number(d.getAttribute("cy"))] : null;
  })(),
  cutoffY: cutoff ? Number(cutoff.getAttribute("y1")) : null,
  search: window.location.search,
};
"""


def chart_state(driver: WebDriver) -> dict[str, object]:
    state = driver.execute_script(CHART_JS)
    return state if isinstance(state, dict) else {}


def log_in(driver: WebDriver, live_server: LiveServer) -> None:
    user_create("viewer")
    driver.get(f"{live_server.url}/login/")
    driver.find_element(By.ID, "id_username").send_keys("viewer")
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(driver).until(lambda d: d.find_elements(By.ID, "ladder"))


def burning_plan() -> None:
    """A plan burning 20 %/h for the last 3 hours, 30 % left now: at the 2 % cutoff in 84 minutes,
    before its reset in 2 hours (a 5h window: no reading may name a reset more than 5 h ahead)."""
    catalog_row("acme", "oauth", "subscription", "hard-stop")
    model_row("acme", "acme-coder")
    connection_create("b-plan")
    now = timezone.now()
    reset = now + timedelta(hours=2)
    for quarter in range(12, -1, -1):
        at = now - timedelta(minutes=15 * quarter)
        reading_add("b-plan", {"5h": 30.0 + 5.0 * quarter, "7d": 70.0}, at=at, reset_in=reset - at)


def shoot(driver: WebDriver, artifacts: Path, name: str) -> None:
    driver.execute_script("document.getElementById('chart').scrollIntoView();")
    target = artifacts / f"chart-{name}.png"
    assert driver.save_screenshot(str(target))
    assert target.stat().st_size > 10_000


def test_it_switches_the_range_in_place_and_draws_the_forecast(
    browser: WebDriver, live_server: LiveServer, artifacts: Path
) -> None:
    burning_plan()
    log_in(browser, live_server)
    browser.get(f"{live_server.url}/connections/b-plan/")

    # Three hours of readings: the automatic range is 6 h, which has room for the forecast.
    state = chart_state(browser)
    assert state["range"] == "6h"
    assert state["title"] == "Last 6 h"
    assert state["chosen"] == "6 h"
    assert state["yticks"] == ["0%", "25%", "50%", "75%", "100%"]
    assert state["axes"] == ["time (UTC)", "remaining %"]
    assert len(state["ticks"]) >= 6  # type: ignore[arg-type]
    forecast = state["forecast"]
    assert isinstance(forecast, dict)
    assert forecast["dash"] not in ("none", "")  # drawn dashed
    assert forecast["width"] > 20  # really on screen, going right and down
    assert forecast["height"] > 20
    assert [forecast["x1"], forecast["y1"]] == state["dot"]  # from the latest reading…
    assert forecast["y2"] == state["cutoffY"]  # …down to the cutoff
    assert forecast["x2"] > forecast["x1"]
    assert "5h runs out at" in str(forecast["title"])
    shoot(browser, artifacts, "6h-forecast")

    browser.execute_script("window.ladderNoReload = true;")
    browser.execute_script("document.querySelector('#chart a[data-range=\"1h\"]').click();")
    wait(browser).until(lambda d: chart_state(d).get("range") == "1h")
    state = chart_state(browser)
    assert state["title"] == "Last 1 h"
    assert state["search"] == "?range=1h"  # the URL follows, so a reload keeps the range
    assert state["forecast"] is None  # 84 minutes away: beyond the 15 minutes the 1 h plot looks ahead
    assert browser.execute_script("return window.ladderNoReload === true;"), "the page reloaded"
    shoot(browser, artifacts, "1h")

    browser.execute_script("document.querySelector('#chart a[data-range=\"24h\"]').click();")
    wait(browser).until(lambda d: chart_state(d).get("range") == "24h")
    # The polling keeps the chosen range: after a few polls it is still 24 h.
    browser.execute_script(
        "window.ladderPolls = 0;document.body.addEventListener('htmx:afterSwap', () => window.ladderPolls++);"
    )
    wait(browser).until(lambda d: d.execute_script("return window.ladderPolls;") >= 2)
    state = chart_state(browser)
    assert state["range"] == "24h"
    assert isinstance(state["forecast"], dict)
    assert browser.execute_script("return window.ladderNoReload === true;"), "the page reloaded"
    shoot(browser, artifacts, "24h-forecast")


def test_it_works_without_javascript_through_the_links(
    browser: WebDriver, live_server: LiveServer, artifacts: Path
) -> None:
    burning_plan()
    log_in(browser, live_server)
    browser.get(f"{live_server.url}/connections/b-plan/?range=7d")
    state = chart_state(browser)
    assert state["range"] == "7d"
    assert state["series"] == 2
    hrefs = browser.execute_script(
        "return Array.from(document.querySelectorAll('#chart nav.ranges a'))"
        ".map(a => a.getAttribute('href'));"
    )
    assert hrefs == [f"/connections/b-plan/?range={key}" for key in ("1h", "6h", "24h", "7d")]
    shoot(browser, artifacts, "7d")

    browser.get(f"{live_server.url}/connections/b-plan/?range=2h")
    assert (
        "range must be one of 1h, 6h, 24h, 7d; got '2h'." in browser.find_element(By.ID, "range-error").text
    )
    assert chart_state(browser)["range"] == "6h"
