"""The alerts page in Chromium: "Send a test" reaches a real local webhook receiver, and the page
shows the delivery sent (and a failed one with its error). Screenshots: artifacts/alerts-*.png."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from ladder import models as m
from ladder.services import alert_delivery, enqueue
from tests.alert_receivers import WebhookReceiver
from tests.browser.conftest import wait
from tests.dashboard.factories import PASSWORD, user_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch, hot: redis.Redis) -> None:
    """Each queued delivery is attempted at once, in the process that queued it, as its Celery task
    would (same owner, same service call): no broker and no worker process needed."""

    def attempt_now(name: str, *, args: list[Any], task_id: str, countdown_s: float) -> bool:
        alert_delivery.delivery_attempt(delivery_pk=args[0], owner=task_id, now=timezone.now(), lease_s=30)
        return True

    monkeypatch.setattr(enqueue, "task_send", attempt_now)


def log_in(driver: WebDriver, live_server: LiveServer) -> None:
    user_create("operator", staff=True, perms=("change_alertchannel", "change_alertrule"))
    driver.get(f"{live_server.url}/login/")
    driver.find_element(By.ID, "id_username").send_keys("operator")
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(driver).until(lambda d: d.find_elements(By.ID, "ladder"))


def test_it_sends_a_test_to_a_real_webhook_and_shows_the_deliveries(
    browser: WebDriver, live_server: LiveServer, receiver: WebhookReceiver, worker: None, artifacts: Path
) -> None:
    hook = m.AlertChannel.objects.create(name="ops-hook", kind="webhook", url=receiver.url())
    rule = m.AlertRule.objects.create(name="plan runs out", kind="window_latched")
    now = timezone.now()
    episode = m.AlertEpisode.objects.create(
        rule=rule,
        subject="claude-max/5h",
        summary="claude-max/5h latched at 0 %",
        opened_at=now - timedelta(minutes=12),
        last_seen_at=now,
    )
    m.AlertDelivery.objects.create(
        delivery_id=uuid.uuid4(),
        episode=episode,
        channel=hook,
        event="fired",
        status="failed",
        attempts=8,
        last_error="HTTP 500 from the receiver",
        created_at=now - timedelta(minutes=11),
    )
    log_in(browser, live_server)
    browser.get(f"{live_server.url}/alerts/")
    assert "claude-max/5h" in browser.find_element(By.ID, "open-episodes").text
    assert "HTTP 500 from the receiver" in browser.find_element(By.CSS_SELECTOR, "tr.delivery-failed").text

    browser.find_element(By.CSS_SELECTOR, f"#channel-{hook.pk} button[type=submit]").click()

    wait(browser).until(
        lambda d: "Test queued to ops-hook" in d.find_element(By.CSS_SELECTOR, ".messages").text
    )
    test = m.AlertDelivery.objects.get(event="test")
    assert receiver.count() == 1
    assert receiver.requests[0].headers["x-ladder-delivery-id"] == str(test.delivery_id)
    row = f'tr[data-delivery="{test.delivery_id}"]'
    wait(browser).until(lambda d: "sent" in d.find_element(By.CSS_SELECTOR, row).text)
    assert browser.find_element(By.CSS_SELECTOR, row).get_attribute("class") == "delivery delivery-sent"
    browser.execute_script("document.getElementById('deliveries').scrollIntoView();")
    target = artifacts / "alerts-page.png"
    assert browser.save_screenshot(str(target))
    assert target.stat().st_size > 10_000
