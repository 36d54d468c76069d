"""Real headless Chromium (Debian's chromium + chromium-driver) driven by Selenium against a live server.

Never Selenium Manager and never a downloaded browser: both paths are given. Missing binaries fail the
tests (install them with ``apt-get install -y chromium chromium-driver``); they are never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from devtools.fakeupstream import FakeUpstream

CHROMIUM = Path(os.environ.get("LADDER_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("LADDER_CHROMEDRIVER", "/usr/bin/chromedriver"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


@pytest.fixture(autouse=True)
def _dashboard_settings(settings: pytest.FixtureRequest) -> None:
    settings.LADDER_HOTSTATE_PREFIX = "ladder:test-browser"  # type: ignore[attr-defined]
    settings.LADDER_DASHBOARD_POLL_S = 0.5  # type: ignore[attr-defined]


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(
            f"headless Chromium is required and missing: {', '.join(missing)}. Install it with "
            "`apt-get update && apt-get install -y chromium chromium-driver` (make test does this).",
            pytrace=False,
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in CHROMIUM_ARGS:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def wait(driver: WebDriver, timeout_s: float = 10.0) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, timeout_s, poll_frequency=0.1)
