from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from devtools.fakeupstream import FakeUpstream
from ladder import models as m
from ladder import tasks
from ladder.services import enqueue
from ladder.services.refresh.claim import claim_deadline, connections_claim
from tests.browser.conftest import wait
from tests.dashboard.factories import (
    PASSWORD,
    catalog_row,
    connection_create,
    editor_create,
    model_row,
    reading_add,
)
from tests.services.refresh.rows import refresh

pytestmark = pytest.mark.django_db(transaction=True)


def log_in(driver: WebDriver, live_server: LiveServer, username: str) -> None:
    driver.get(f"{live_server.url}/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(driver).until(lambda d: d.find_elements(By.ID, "ladder"))


def poll_now(connection_id: str) -> str:
    """One real poll of the connection's quota endpoint (the fake upstream), stored like beat does."""
    now = timezone.now()
    assert connections_claim(connection_ids=[connection_id], now=now, lease_s=30) == [connection_id]
    return refresh(connection_id, claim_deadline(now, 30))


def zai_plan(upstream: FakeUpstream, connection_id: str = "b-zai") -> None:
    """A z.ai GLM coding plan: subscription, hard-stop, polled from the fake upstream."""
    catalog_row("zai", "apikey", "subscription", "hard-stop")
    model_row("zai", "glm-4.6")
    connection = connection_create(
        connection_id, provider="zai", auth_type="apikey", base_url=upstream.url_for("zai-glm", connection_id)
    )
    connection.set_credential("zai-test-key")
    connection.save()


# Read in one script call: the polling swaps the cards out under any element handle kept across calls.
POOL_STATE_JS = """
const card = document.getElementById(arguments[0]);
const item = card && card.querySelector('li[data-grouping="' + arguments[1] + '"]');
return item ? item.className : "missing";
"""


def pool_state(driver: WebDriver, card_id: str, grouping: str) -> str:
    return str(driver.execute_script(POOL_STATE_JS, card_id, grouping))


def text_of(driver: WebDriver, element_id: str) -> str:
    return str(
        driver.execute_script(
            "const e = document.getElementById(arguments[0]); return e ? e.innerText : '';", element_id
        )
    )


def test_it_moves_a_drained_connection_out_of_the_pool_without_a_reload(
    browser: WebDriver, live_server: LiveServer, upstream: FakeUpstream
) -> None:
    zai_plan(upstream)
    control = upstream.control()
    control.set_remaining("zai-glm", 60, connection="b-zai")
    assert poll_now("b-zai") == "ok"
    editor_create()
    log_in(browser, live_server, "editor")

    wait(browser).until(lambda d: "pool-in" in pool_state(d, "card-b-zai-0", "auto/subscription"))
    assert "60% left" in text_of(browser, "card-b-zai-0")
    browser.execute_script("window.ladderNoReload = true;")

    # Drained to 0 % a while ago, and it stays empty for 15 minutes.
    control.drain(
        "zai-glm",
        connection="b-zai",
        drain_s=1,
        start_pct=60,
        end_pct=0,
        reset_after_s=900,
        started_at=timezone.now() - timedelta(seconds=5),
    )
    assert poll_now("b-zai") == "ok"

    wait(browser).until(lambda d: "pool-out" in pool_state(d, "card-b-zai-0", "auto/subscription"))
    assert "pool-out" in pool_state(browser, "card-b-zai-0", "auto/thrifty")
    card = text_of(browser, "card-b-zai-0")
    assert "quota exhausted" in card
    assert "0% left" in card
    assert browser.execute_script("return window.ladderNoReload === true;"), "the page reloaded"


def test_it_curates_an_uncurated_provider_inline_and_the_preview_follows(
    browser: WebDriver, live_server: LiveServer
) -> None:
    model_row("mystery", "mystery-1")
    connection_create("b-mystery", provider="mystery", auth_type="apikey")
    reading_add("b-mystery", {"monthly": 70})
    editor_create()
    log_in(browser, live_server, "editor")

    preview = f"{live_server.url}/pool/?model=auto/subscription"
    browser.get(preview)
    assert browser.find_elements(
        By.CSS_SELECTOR, '[data-connection="b-mystery"][data-reason="uncurated_provider"]'
    )
    assert browser.find_elements(By.ID, "empty-pool")

    browser.get(f"{live_server.url}/catalog/")
    row = browser.find_element(By.ID, "new-mystery--apikey")
    Select(row.find_element(By.NAME, "billing")).select_by_value("subscription")
    Select(row.find_element(By.NAME, "overage")).select_by_value("hard-stop")
    row.find_element(By.NAME, "notes").send_keys("Mystery Pro plan, refuses past quota")
    browser.execute_script("window.ladderNoReload = true;")
    row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    entry = m.BillingCatalogEntry.objects.filter(provider="mystery", auth_type="apikey")
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".catalog-row .ok"))
    assert browser.execute_script("return window.ladderNoReload === true;"), "the edit was not inline"
    assert entry.get().billing == "subscription"
    assert not browser.find_elements(By.ID, "new-mystery--apikey")
    history = browser.find_element(By.ID, "catalog-history").text
    assert "editor changed mystery/apikey billing" in history

    browser.get(preview)
    pool = browser.find_element(By.ID, "pool-entries").text
    assert "mystery/mystery-1 via b-mystery" in pool
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-reason="uncurated_provider"]')


def no_horizontal_scroll(driver: WebDriver) -> bool:
    return bool(driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth;"))


def test_it_saves_screenshots_at_desktop_and_phone_widths(
    browser: WebDriver, live_server: LiveServer, upstream: FakeUpstream, artifacts: Path
) -> None:
    zai_plan(upstream)
    upstream.control().set_remaining("zai-glm", 3.5, connection="b-zai")
    assert poll_now("b-zai") == "ok"
    for index in range(6):
        connection_create(
            f"demo-{index}-a-rather-long-connection-identifier",
            provider="zai",
            auth_type="apikey",
            position=index + 1,
        )
        reading_add(f"demo-{index}-a-rather-long-connection-identifier", {"5h": 10 + 15 * index, "7d": 90})
    model_row("openai", "gpt-5-mini", price="0.25")
    connection_create("b-openai", provider="openai", auth_type="apikey", position=20)
    config = m.LadderConfiguration.load()
    config.rung_budget_usd = {"cheap": 5.0}
    config.save()
    editor_create()
    log_in(browser, live_server, "editor")

    for width, height, suffix in ((1280, 900, "desktop"), (390, 844, "phone")):
        browser.set_window_size(width, height)
        for path, name in (
            ("/", "overview"),
            ("/connections/b-zai/", "connection"),
            ("/catalog/", "catalog"),
            ("/pool/?model=auto/thrifty", "pool-preview"),
        ):
            browser.get(f"{live_server.url}{path}")
            wait(browser).until(lambda d: d.execute_script("return document.readyState") == "complete")
            assert no_horizontal_scroll(browser), f"{name} scrolls sideways at {width}px"
            target = artifacts / f"dashboard-{name}-{suffix}.png"
            assert browser.save_screenshot(str(target))
            assert target.stat().st_size > 10_000
    browser.get(f"{live_server.url}/connections/b-zai/")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart-svg polyline.series")


HIDE_JS = "Object.defineProperty(document, 'hidden', {value: arguments[0], configurable: true});"
SHOW_JS = HIDE_JS + " document.dispatchEvent(new Event('visibilitychange'));"


def test_it_pauses_polling_while_the_tab_is_hidden(browser: WebDriver, live_server: LiveServer) -> None:
    editor_create()
    log_in(browser, live_server, "editor")
    first = text_of(browser, "as-of")
    wait(browser).until(lambda d: text_of(d, "as-of") not in ("", first))  # polling runs (every 0.5 s)

    browser.execute_script(HIDE_JS, True)
    time.sleep(0.6)  # let a request already in flight land
    paused = text_of(browser, "as-of")
    time.sleep(2.2)  # four poll intervals, and the clock shown has whole seconds
    assert text_of(browser, "as-of") == paused, "polled while hidden"

    browser.execute_script(SHOW_JS, False)
    wait(browser, 3).until(lambda d: text_of(d, "as-of") != paused)


def test_it_refreshes_a_connection_from_its_page(
    browser: WebDriver,
    live_server: LiveServer,
    upstream: FakeUpstream,
    hot: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[list[str]] = []

    def record(name: str, *, args: list[Any], **kwargs: Any) -> bool:
        sent.append(args[0])
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    zai_plan(upstream)
    control = upstream.control()
    control.set_remaining("zai-glm", 42, connection="b-zai")
    editor_create()
    log_in(browser, live_server, "editor")
    browser.get(f"{live_server.url}/connections/b-zai/")
    assert "Reading: none yet." in text_of(browser, "detail")

    browser.find_element(By.CSS_SELECTOR, "#detail form button[type=submit]").click()
    # The answer swaps in at once: the refresh is queued for a worker, upstream is not polled.
    wait(browser, 15).until(lambda d: "Refresh pending" in text_of(d, "detail"))
    assert sent == [["b-zai"]]
    assert control.count("zai-glm", connection="b-zai") == 0
    assert "Reading: none yet." in text_of(browser, "detail")

    tasks.refresh_connections.apply(args=(sent[0],)).get()  # the worker's run
    # The 0.5 s polling shows the reading the worker stored, and the refresh no longer pending.
    wait(browser, 15).until(lambda d: "source poll" in text_of(d, "detail"))
    assert "42%" in text_of(browser, "detail")
    assert "Refresh pending" not in text_of(browser, "detail")
    assert control.count("zai-glm", connection="b-zai") == 1
    assert m.QuotaReading.objects.filter(connection_id="b-zai").count() == 1
    control.close()


def test_it_holds_a_plan_back_at_its_reserve_in_plain_words(
    browser: WebDriver, live_server: LiveServer, upstream: FakeUpstream, artifacts: Path
) -> None:
    """Issue #15: a reserve of 20 % set on the connection page; the fake upstream drains the plan to
    19 %; the page, polling, shows it out of auto/subscription, held back for the operator."""
    zai_plan(upstream)
    control = upstream.control()
    control.set_remaining("zai-glm", 60, connection="b-zai", reset_at=timezone.now() + timedelta(hours=3))
    assert poll_now("b-zai") == "ok"
    editor_create()
    log_in(browser, live_server, "editor")
    browser.get(f"{live_server.url}/connections/b-zai/")
    wait(browser).until(lambda d: "auto/subscription in pool" in text_of(d, "detail"))

    field = browser.find_element(By.ID, "reserve_pct")
    field.clear()
    field.send_keys("20")
    browser.find_element(By.CSS_SELECTOR, "form.reserve button[type=submit]").click()
    wait(browser, 15).until(lambda d: "Reserve set: 20 %" in text_of(d, "detail"))
    assert m.Connection.objects.get(pk="b-zai").reserve_pct == 20.0
    assert "auto/subscription in pool" in text_of(browser, "detail")  # 60 % is above the reserve
    browser.execute_script("window.scrollTo(0, 0);")
    assert browser.save_screenshot(str(artifacts / "reserve-20-set.png"))

    control.set_remaining("zai-glm", 19, connection="b-zai", reset_at=timezone.now() + timedelta(hours=3))
    assert poll_now("b-zai") == "ok"

    words = "auto/subscription out of pool: held back: 20 % kept for your own use"
    wait(browser, 15).until(lambda d: words in text_of(d, "detail"))
    browser.execute_script("window.scrollTo(0, 0);")
    assert browser.save_screenshot(str(artifacts / "reserve-20-held-back.png"))
    browser.get(f"{live_server.url}/")  # the overview's bar draws the reserve as its own band
    wait(browser).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#card-b-zai-0 .w-reserved svg.bar rect.reserve")
    )
    assert browser.save_screenshot(str(artifacts / "reserve-20-overview.png"))
    browser.get(f"{live_server.url}/pool/?model=auto/subscription")
    wait(browser).until(
        lambda d: "held back: 20 % kept for your own use" in d.find_element(By.TAG_NAME, "body").text
    )
    assert browser.save_screenshot(str(artifacts / "reserve-20-pool-preview.png"))
    control.close()
