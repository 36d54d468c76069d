"""Alert deliveries against real local receivers: an HTTP server for the webhooks, aiosmtpd for
e-mail. Attempts are called one by one (what the task does), the next one's message recorded instead
of queued, so that nothing waits for a backoff."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from django.core.exceptions import ValidationError

from ladder import models as m
from ladder.services import alert_delivery, enqueue
from ladder.services.alert_delivery import (
    alert_channel_default_webhook,
    deliveries_sweep,
    delivery_attempt,
    enqueue_deliveries,
    enqueue_test,
    retry_delay_s,
)
from tests.alert_receivers import WebhookReceiver, smtp_server, verify_standard_webhook

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
SECRET = "whsec_" + base64.b64encode(b"a key of thirty-two bytes, 32 b!").decode()
LEASE_S = 30.0


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch, hot: redis.Redis) -> list[tuple[int, str, float]]:
    """The tasks the service sends: (delivery pk, task id, countdown), recorded, not sent."""
    sent: list[tuple[int, str, float]] = []

    def record(name: str, *, args: list[Any], task_id: str, countdown_s: float) -> bool:
        assert name == "ladder.tasks.deliver_alert"
        sent.append((args[0], task_id, countdown_s))
        return True

    monkeypatch.setattr(enqueue, "task_send", record)
    return sent


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


def channel(
    name: str = "hook", kind: str = "webhook", *, url: str = "", secret: str = "", **kw: Any
) -> m.AlertChannel:
    row = m.AlertChannel(name=name, kind=kind, url=url, **kw)
    row.set_secret(secret)
    row.full_clean()
    row.save()
    return row


def episode(*, closed: bool = False, channels: tuple[m.AlertChannel, ...] = ()) -> m.AlertEpisode:
    rule = m.AlertRule.objects.create(name="plan runs out", kind="window_latched")
    rule.channels.set(channels)
    return m.AlertEpisode.objects.create(
        rule=rule,
        subject="demo-claude-max/5h",
        summary="demo-claude-max 5h latched at 1 %",
        detail={"remaining_pct": 1.0},
        opened_at=NOW,
        last_seen_at=NOW,
        closed_at=NOW + timedelta(minutes=20) if closed else None,
    )


def attempt(
    delivery: m.AlertDelivery, owner: str = "task-1", now: datetime = NOW
) -> alert_delivery.AttemptOutcome:
    return delivery_attempt(delivery_pk=delivery.pk, owner=owner, now=now, lease_s=LEASE_S)


def test_it_retries_after_a_500_with_the_same_id_and_a_signature_that_verifies(
    receiver: WebhookReceiver, queued: list[tuple[int, str, float]], django_capture_on_commit_callbacks: Any
) -> None:
    channel(url=receiver.url(), secret=SECRET)
    receiver.script[:] = [500]
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = enqueue_deliveries(episode=episode(), event="fired", now=NOW)
    assert [(pk, countdown) for pk, _, countdown in queued] == [(delivery.pk, 0.0)]
    owner = queued[0][1]

    first = attempt(delivery, owner, now=datetime.now(UTC))
    assert first.status == "retry"
    assert first.retry_in_s is not None
    assert first.retry_in_s > 0
    assert queued[1][:2] == (delivery.pk, owner)  # the next attempt: the same message id, later
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (
        "pending",
        1,
        f"HTTP 500 from http://127.0.0.1:{receiver.port}/…: ok",
    )

    assert attempt(delivery, owner, now=datetime.now(UTC)).status == "sent"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 2, "")
    assert receiver.count() == 2
    for request in receiver.requests:
        assert request.headers["webhook-id"] == str(delivery.delivery_id)
        assert request.headers["x-ladder-delivery-id"] == str(delivery.delivery_id)
        assert request.json()["delivery_id"] == str(delivery.delivery_id)
        assert verify_standard_webhook(SECRET, request.headers, request.body)
        assert not verify_standard_webhook(
            "whsec_" + base64.b64encode(b"another key").decode(), request.headers, request.body
        )
    body = receiver.requests[0].json()
    assert body["event"] == "fired"
    assert body["rule"] == {"name": "plan runs out", "kind": "window_latched"}
    assert body["subject"] == "demo-claude-max/5h"
    assert body["opened_at"] == "2026-12-03T12:00:00Z"
    assert receiver.requests[0].body == receiver.requests[1].body  # the stored payload, byte for byte


def test_it_signs_with_a_plain_secret_s_bytes(
    receiver: WebhookReceiver, queued: list[Any], settings: Any
) -> None:
    settings.LADDER_PUBLIC_URL = "https://ladder.example.com/"
    hook = channel(url=receiver.url(), secret="plain shared secret")
    delivery = enqueue_test(channel=hook, now=NOW)
    assert attempt(delivery, now=datetime.now(UTC)).status == "sent"
    (request,) = receiver.requests
    assert verify_standard_webhook("plain shared secret", request.headers, request.body)
    assert request.json()["event"] == "test"
    assert request.json()["rule"] is None
    assert request.json()["link"] == "https://ladder.example.com/"


def test_it_refuses_a_bare_whsec_secret_rather_than_sign_with_an_empty_key(
    receiver: WebhookReceiver, queued: list[Any]
) -> None:
    delivery = enqueue_test(channel=channel(url=receiver.url(), secret="whsec_"), now=NOW)
    outcome = attempt(delivery)
    assert (outcome.status, outcome.error) == ("failed", "secret: no key after 'whsec_'")
    assert receiver.requests == []


def test_it_fails_at_once_on_a_404_and_records_it_without_the_url_s_secret(
    receiver: WebhookReceiver, queued: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    hook = channel(kind="slack", url=receiver.url("/services/T000/B000/sEcReTtOkEn"))
    receiver.script[:] = [404]
    delivery = enqueue_test(channel=hook, now=NOW)
    outcome = attempt(delivery)
    delivery.refresh_from_db()
    assert outcome.status == "failed"
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.last_error.startswith("HTTP 404 from http://127.0.0.1:")
    assert "sEcReTtOkEn" not in delivery.last_error
    assert "/services" not in delivery.last_error
    assert queued == []  # no retry
    assert receiver.count() == 1
    assert "sEcReTtOkEn" not in caplog.text  # nor in any log line


def test_it_gives_up_after_the_last_attempt(
    receiver: WebhookReceiver, queued: list[Any], settings: Any
) -> None:
    settings.LADDER_ALERT_MAX_ATTEMPTS = 2
    receiver.script[:] = [503, 429]
    delivery = enqueue_test(channel=channel(url=receiver.url()), now=NOW)
    assert attempt(delivery).status == "retry"
    assert attempt(delivery).status == "failed"
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.last_error.startswith("gave up after 2 attempts: HTTP 429")


def test_it_retries_a_refused_connection_and_keeps_the_secret_out_of_the_error(queued: list[Any]) -> None:
    from tests.reliability.processes import free_port

    url = f"http://127.0.0.1:{free_port()}/hook/t0ps3cret?token=zz9"
    delivery = enqueue_test(channel=channel(kind="discord", url=url), now=NOW)
    outcome = attempt(delivery)
    assert outcome.status == "retry"
    assert "ConnectError" in outcome.error
    assert "t0ps3cret" not in outcome.error
    assert "zz9" not in outcome.error


def test_it_sends_slack_and_discord_bodies(receiver: WebhookReceiver, queued: list[Any]) -> None:
    slack = channel("slack", "slack", url=receiver.url("/slack"))
    discord = channel("discord", "discord", url=receiver.url("/discord"))
    (first, second) = enqueue_deliveries(episode=episode(closed=True), event="recovered", now=NOW)
    for delivery in (first, second):
        assert attempt(delivery).status == "sent"
    by_path = {request.path: request for request in receiver.requests}
    slack_body = by_path["/slack"].json()
    assert slack_body["text"].startswith("[RECOVERED] plan runs out: demo-claude-max/5h")
    assert slack_body["blocks"][0]["type"] == "section"
    discord_body = by_path["/discord"].json()
    assert discord_body["content"].startswith("[RECOVERED] plan runs out: demo-claude-max/5h")
    assert discord_body["allowed_mentions"] == {"parse": []}
    for path, row in (("/slack", slack), ("/discord", discord)):
        delivery = m.AlertDelivery.objects.get(channel=row)
        assert by_path[path].headers["x-ladder-delivery-id"] == str(delivery.delivery_id)
        assert str(delivery.delivery_id) in str(by_path[path].json())
        assert delivery.payload["closed_at"] == "2026-12-03T12:20:00Z"


def test_it_sends_an_email_with_the_delivery_id(queued: list[Any], settings: Any) -> None:
    with smtp_server() as smtp:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
        mail = channel("mail", "email", email_to="ops@example.com,\n oncall@example.com")
        delivery = enqueue_test(channel=mail, now=NOW)
        assert attempt(delivery).status == "sent"
    (message,) = smtp.messages
    assert message["X-Ladder-Delivery-Id"] == str(delivery.delivery_id)
    assert message["Message-ID"] == f"<{delivery.delivery_id}@omniroute-ladder>"
    assert message["Subject"].startswith("[TEST] OmniRoute Ladder: test")
    assert smtp.envelopes[0][1] == ["ops@example.com", "oncall@example.com"]
    assert str(delivery.delivery_id) in message.get_payload()


def test_it_creates_one_delivery_per_channel_and_event_once(
    queued: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    a, b = channel("a", url="https://a.example/h"), channel("b", url="https://b.example/h")
    channel("off", url="https://off.example/h", enabled=False)
    everyone = episode()
    with django_capture_on_commit_callbacks(execute=True):
        fired = enqueue_deliveries(episode=everyone, event="fired", now=NOW)
        again = enqueue_deliveries(episode=everyone, event="fired", now=NOW + timedelta(minutes=1))
        recovered = enqueue_deliveries(episode=everyone, event="recovered", now=NOW)
    assert {d.channel.name for d in fired} == {"a", "b"}  # the rule names none: every enabled channel
    assert [d.pk for d in again] == [d.pk for d in fired]
    assert len(queued) == 4  # two fired, two recovered; the repeat queued nothing
    assert len({d.delivery_id for d in fired + recovered}) == 4

    late = channel("late", url="https://late.example/h")  # added after the firing: no recovery
    assert {d.channel.name for d in enqueue_deliveries(episode=everyone, event="recovered", now=NOW)} == {
        "a",
        "b",
    }
    del late

    m.AlertRule.objects.all().delete()
    only_b = episode(channels=(b,))
    assert [d.channel for d in enqueue_deliveries(episode=only_b, event="fired", now=NOW)] == [b]
    with pytest.raises(ValueError, match="event"):
        enqueue_deliveries(episode=only_b, event="test", now=NOW)
    del a


def test_a_copy_of_a_message_does_nothing_while_another_owns_the_delivery(
    receiver: WebhookReceiver, queued: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        delivery = enqueue_test(channel=channel(url=receiver.url()), now=NOW)
    ((_, owner, _),) = queued
    assert attempt(delivery, owner="a-copy").status == "skipped"
    assert attempt(delivery, owner=owner).status == "sent"
    assert attempt(delivery, owner=owner).status == "skipped"  # sent: nothing left to do
    assert receiver.count() == 1


def test_the_sweep_queues_again_what_no_message_owns(
    queued: list[Any], settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.LADDER_ALERT_SWEEP_S = 60
    now = datetime.now(UTC)
    hook = channel(url="https://a.example/h")
    with django_capture_on_commit_callbacks(execute=True):
        lost = enqueue_test(channel=hook, now=now - timedelta(minutes=5))
        young = enqueue_test(channel=hook, now=now)
        owned = enqueue_test(channel=hook, now=now - timedelta(minutes=5))
    alert_delivery.redis_client().delete(
        alert_delivery.owner_key(lost.pk), alert_delivery.owner_key(young.pk)
    )
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_sweep(now=now) == 1
    assert [pk for pk, _, _ in queued] == [lost.pk]
    assert deliveries_sweep(now=now) == 0  # queued again: owned now
    del owned


def test_the_backoff_grows_with_jitter(settings: Any) -> None:
    settings.LADDER_ALERT_RETRY_BASE_S, settings.LADDER_ALERT_RETRY_MAX_S = 10, 600
    import random

    rng = random.Random(7)
    delays = [retry_delay_s(n, rng=rng) for n in range(1, 10)]
    assert 5 <= delays[0] <= 10
    assert 10 <= delays[1] <= 20
    assert 20 <= delays[2] <= 40
    assert all(300 <= d <= 600 for d in delays[-3:])
    assert len({retry_delay_s(3) for _ in range(20)}) > 1


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"kind": "webhook"}, "url", "needs a url"),
        ({"kind": "slack", "url": "ftp://x.example/h"}, "url", "http:// or https://"),
        ({"kind": "email"}, "email_to", "at least one address"),
        ({"kind": "email", "email_to": "ops@example.com, not-an-address"}, "email_to", "not-an-address"),
        ({"kind": "email", "email_to": "ops@example.com", "url": "https://x.example"}, "url", "no url"),
        (
            {"kind": "discord", "url": "https://d.example/h", "secret": "s"},
            "secret",
            "Only a generic webhook",
        ),
    ],
)
def test_it_validates_a_channel_naming_the_field(fields: dict[str, str], field: str, words: str) -> None:
    secret = fields.pop("secret", "")
    row = m.AlertChannel(name=f"c-{uuid.uuid4().hex[:6]}", **fields)
    row.set_secret(secret)
    with pytest.raises(ValidationError) as caught:
        row.full_clean()
    assert words in " ".join(caught.value.message_dict[field])


def test_it_makes_the_default_webhook_channel_once_and_follows_its_url() -> None:
    made, created = alert_channel_default_webhook(url="https://example.com/alerts")
    same, kept = alert_channel_default_webhook(url="https://example.com/alerts")
    moved, state = alert_channel_default_webhook(url="https://example.com/other")
    assert (created, kept, state) == ("created", "kept", "moved")
    assert made.pk == same.pk == moved.pk
    assert m.AlertChannel.objects.get().url == "https://example.com/other"
    assert moved.kind == "webhook"


def test_the_documented_receiver_check_verifies_what_is_sent(
    receiver: WebhookReceiver, queued: list[Any]
) -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "ALERTS.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/ALERTS.md", "exec"), namespace)
    delivery = enqueue_test(channel=channel(url=receiver.url(), secret=SECRET), now=NOW)
    assert attempt(delivery, now=datetime.now(UTC)).status == "sent"
    (request,) = receiver.requests
    assert namespace["verify"](SECRET, request.headers, request.body)
    assert not namespace["verify"](SECRET, request.headers, request.body + b" ")


@pytest.mark.parametrize(
    ("address", "status", "words"),
    [("refused@example.com", "failed", "550"), ("busy@example.com", "retry", "451")],
)
def test_an_smtp_refusal_fails_at_once_and_a_451_is_tried_again(
    queued: list[Any], settings: Any, address: str, status: str, words: str
) -> None:
    with smtp_server() as smtp:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
        delivery = enqueue_test(channel=channel("mail", "email", email_to=address), now=NOW)
        outcome = attempt(delivery)
    assert outcome.status == status
    assert words in outcome.error
    assert smtp.messages == []


def test_an_unexpected_fault_is_tried_again_and_recorded_without_secrets(
    queued: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://hooks.example.com/services/T0/B0/xoxb-leaky"

    def broken(target: Any, payload: Any, *, now: datetime) -> None:
        raise RuntimeError(f"could not post to {target.url} with {target.secret}")

    monkeypatch.setattr(alert_delivery, "send", broken)
    delivery = enqueue_test(channel=channel(url=url, secret="hush-hush-secret"), now=NOW)
    outcome = attempt(delivery)
    assert outcome.status == "retry"
    assert outcome.error.startswith("RuntimeError: could not post to")
    assert "xoxb-leaky" not in outcome.error
    assert "hush-hush-secret" not in outcome.error


def test_it_waits_as_long_as_a_429_asks_within_its_cap(
    receiver: WebhookReceiver, queued: list[Any], settings: Any
) -> None:
    settings.LADDER_ALERT_RETRY_BASE_S, settings.LADDER_ALERT_RETRY_MAX_S = 1, 120
    receiver.script[:] = [429, 429]
    delivery = enqueue_test(channel=channel(url=receiver.url()), now=NOW)
    receiver.retry_after = "90"
    assert attempt(delivery).retry_in_s == 90
    receiver.retry_after = "3600"
    assert attempt(delivery).retry_in_s == 120


def test_a_400_with_an_odd_retry_after_fails_at_once(receiver: WebhookReceiver, queued: list[Any]) -> None:
    """'²' passes str.isdigit() but not float(): the answer is still read as the 400 it is."""
    receiver.script[:] = [400]
    receiver.retry_after = "²"
    delivery = enqueue_test(channel=channel(url=receiver.url()), now=NOW)
    outcome = attempt(delivery)
    assert outcome.status == "failed"
    assert outcome.error.startswith("HTTP 400 from ")
