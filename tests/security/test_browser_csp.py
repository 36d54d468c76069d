"""The Content-Security-Policy in a real browser: the admin and the dashboard (htmx polling included)
work under it, and Chromium reports no violation and no JavaScript error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.live_server_helper import LiveServer
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import CHROMEDRIVER, CHROMIUM, CHROMIUM_ARGS, wait
from tests.security.rows import CREDENTIAL_TAIL, rows_create

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-Operator-2468"
CANARY_JS = "document.body.insertAdjacentHTML('beforeend', '<p id=\"canary\" style=\"color: red\">x</p>');"


@pytest.fixture
def browser(settings: Any) -> Iterator[webdriver.Chrome]:
    settings.LADDER_DASHBOARD_POLL_S = 0.5
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(f"headless Chromium is required and missing: {', '.join(missing)}", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in CHROMIUM_ARGS:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def problems(driver: webdriver.Chrome) -> list[str]:
    """Console entries that are CSP violations or errors (reading the log empties it). The browser's
    own request for /favicon.ico (the site has none) is not a page's doing."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if (entry["level"] == "SEVERE" or "Content Security Policy" in entry["message"])
        and "/favicon.ico" not in entry["message"]
    ]


def log_in(driver: WebDriver, url: str, username: str) -> None:
    driver.get(url)
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form [type=submit]").click()


def text_of(driver: WebDriver, element_id: str) -> str:
    script = "const e = document.getElementById(arguments[0]); return e ? e.innerText : '';"
    return str(driver.execute_script(script, element_id))


def test_the_admin_and_the_dashboard_run_under_the_policy(
    browser: webdriver.Chrome, live_server: LiveServer
) -> None:
    rows = rows_create()
    User.objects.create_superuser("root", "root@example.test", PASSWORD)
    base = live_server.url

    log_in(browser, f"{base}/admin/login/", "root")
    wait(browser).until(lambda d: d.find_elements(By.ID, "site-name") and "/admin/login" not in d.current_url)
    for path in (
        "/admin/",
        "/admin/ladder/connection/",
        f"/admin/ladder/connection/{rows.connection.pk}/change/",
        "/admin/ladder/gatewaytoken/add/",
        "/admin/django_celery_beat/periodictask/add/",
    ):
        browser.get(base + path)
        assert browser.find_elements(By.ID, "content"), path
        assert CREDENTIAL_TAIL not in browser.page_source, path
    # The admin's own scripts ran: the date widget's shortcuts are built by admin/js/calendar.js.
    browser.get(f"{base}/admin/ladder/connection/{rows.connection.pk}/change/")
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".datetimeshortcuts"))
    browser.find_element(By.CSS_SELECTOR, "#logout-form [type=submit]").click()
    wait(browser).until(lambda d: "logged out" in d.page_source.lower())

    log_in(browser, f"{base}/login/", "root")
    wait(browser).until(lambda d: d.find_elements(By.ID, "ladder"))
    first = text_of(browser, "as-of")
    wait(browser).until(lambda d: text_of(d, "as-of") not in ("", first))  # htmx polled and swapped
    browser.get(f"{base}/connections/{rows.connection.pk}/")
    wait(browser).until(lambda d: d.find_elements(By.ID, "detail"))
    assert CREDENTIAL_TAIL not in browser.page_source
    browser.get(f"{base}/pool/?model=auto/thrifty")
    wait(browser).until(lambda d: d.find_elements(By.ID, "pool"))

    assert problems(browser) == []

    # The log does show a violation when there is one: an injected style attribute is refused.
    browser.execute_script(CANARY_JS)
    wait(browser).until(lambda d: d.find_elements(By.ID, "canary"))
    colour = browser.execute_script("return getComputedStyle(document.getElementById('canary')).color")
    assert colour != "rgb(255, 0, 0)"
    violations = problems(browser)
    assert any("Content Security Policy" in message for message in violations), violations
