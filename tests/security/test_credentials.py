"""A connection's credential: encrypted at rest with the environment's key, and never rendered,
answered, exported or logged."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection as db_connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream
from ladder import models as m
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.security.crypto import CredentialDecryptionError
from ladder.security.logredact import SecretRedactingFilter
from ladder.services.refresh.claim import claim_deadline, connections_claim
from tests.security.pages import admin_pages, dashboard_pages
from tests.security.rows import CREDENTIAL, CREDENTIAL_TAIL, Rows, rows_create
from tests.services.refresh.rows import refresh

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows() -> Iterator[Rows]:
    snapshot_cache.clear()
    yield rows_create()
    snapshot_cache.clear()


@pytest.fixture
def superuser_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", "root@example.test", "pw-Root-12345"))
    return client


def assert_no_credential(text: str, where: str, *, ciphertext: str = "") -> None:
    assert CREDENTIAL_TAIL not in text, f"the credential leaks in {where}"
    if ciphertext:
        assert ciphertext not in text, f"the stored ciphertext leaks in {where}"


def test_it_stores_only_ciphertext_that_the_environment_key_opens(rows: Rows, settings: Any) -> None:
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ladder_connection WHERE id = %s", [rows.connection.pk])
        row = cursor.fetchone()
    assert row is not None
    assert all(CREDENTIAL_TAIL not in str(value) for value in row)
    stored = m.Connection.objects.get(pk=rows.connection.pk)
    assert stored.credential_ciphertext.startswith("gAAAA")  # a Fernet token
    assert stored.get_credential() == CREDENTIAL

    settings.LADDER_CREDENTIAL_KEY = Fernet.generate_key().decode()  # another deployment's key
    with pytest.raises(CredentialDecryptionError):
        stored.get_credential()


def test_it_renders_the_credential_on_no_admin_page(superuser_client: Client, rows: Rows) -> None:
    ciphertext = rows.connection.credential_ciphertext
    pages = 0
    for url in admin_pages():
        response = superuser_client.get(url)
        assert_no_credential(response.content.decode(), url, ciphertext=ciphertext)
        pages += 1
    change = superuser_client.get(reverse("admin:ladder_connection_change", args=[rows.connection.pk]))
    assert "stored (hidden)" in change.content.decode()  # the page does talk about the credential
    assert pages > 40


def test_it_does_not_echo_a_credential_set_in_the_admin(superuser_client: Client, rows: Rows) -> None:
    url = reverse("admin:ladder_connection_change", args=[rows.connection.pk])
    form = {
        "provider": "claude", "auth_type": "oauth", "enabled": "on", "disabled_reason": "", "position": "0",
        "models": "", "overage_override": "", "base_url": "", "cooldown_until_0": "", "cooldown_until_1": "",
        "backoff_level": "0", "next_refresh_at_0": "", "next_refresh_at_1": "", "claimed_until_0": "",
        "claimed_until_1": "", "credential": "sk-new-" + CREDENTIAL_TAIL[::-1] + CREDENTIAL_TAIL,
    }  # fmt: skip
    response = superuser_client.post(url, form, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain, response.content.decode()[:2000]  # saved, not refused
    assert_no_credential(response.content.decode(), "the page after saving")
    for location, _ in response.redirect_chain:
        assert_no_credential(location, "a redirect")
    assert m.Connection.objects.get(pk=rows.connection.pk).get_credential() == form["credential"]
    history = " ".join(entry.get_change_message() for entry in LogEntry.objects.all())
    assert "credential" in history.lower()  # the change is recorded, by field name only
    assert_no_credential(history, "the admin history")
    assert_no_credential(superuser_client.get(url).content.decode(), "the change form after saving")


def test_it_renders_the_credential_on_no_dashboard_page(superuser_client: Client, rows: Rows) -> None:
    for url, headers in dashboard_pages(rows):
        response = superuser_client.get(url, headers=headers)
        assert response.status_code == 200, url
        assert_no_credential(response.content.decode(), url, ciphertext=rows.connection.credential_ciphertext)


def test_no_api_answer_carries_the_credential(
    client: Client, rows: Rows, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "ladder.gateway.resolve.refresh_request", lambda *, connection_ids: list(connection_ids)
    )
    bearer = {"Authorization": f"Bearer {rows.token_value}"}
    answers = [
        client.get(reverse("ladder:connections"), headers=bearer),
        client.get(reverse("ladder:connection", args=[rows.connection.pk]), headers=bearer),
        client.post(
            reverse("ladder:pools-resolve"),
            json.dumps({"model": "auto/thrifty"}),
            content_type="application/json",
            headers=bearer,
        ),
        client.get(reverse("ladder:models")),
        client.get(reverse("ladder:openapi")),
        client.get(reverse("ladder:readyz")),
    ]
    for response in answers:
        assert response.status_code == 200, (response.wsgi_request.path, response.content[:300])
        assert_no_credential(response.content.decode(), response.wsgi_request.path)
    listed = json.loads(answers[0].content)["connections"]
    assert [c["id"] for c in listed] == [rows.connection.pk]  # answered, without its secret


def test_the_export_carries_no_credential(rows: Rows) -> None:
    out = io.StringIO()
    call_command("ladder_resolve", "--export", stdout=out)
    text = out.getvalue()
    document = json.loads(text)
    assert [c["id"] for c in document["connections"]] == [rows.connection.pk]
    assert_no_credential(text, "ladder_resolve --export", ciphertext=rows.connection.credential_ciphertext)
    assert "credential" not in text


@pytest.fixture
def debug_log() -> Iterator[io.StringIO]:
    """What the handler that settings.LOGGING installs writes, with everything at DEBUG."""
    console = next(handler for handler in logging.getLogger().handlers if handler.name == "console")
    buffer = io.StringIO()
    previous_stream = console.setStream(buffer)  # type: ignore[attr-defined]
    loggers = [logging.getLogger(name) for name in ("", "httpx", "httpcore", "ladder", "django")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    try:
        yield buffer
    finally:
        console.setStream(previous_stream)  # type: ignore[attr-defined]
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def test_a_real_poll_logs_no_credential_at_debug(upstream: FakeUpstream, debug_log: io.StringIO) -> None:
    rows = rows_create(base_url=upstream.url_for("claude-oauth", "sec-poll"))
    now = timezone.now()
    assert connections_claim(connection_ids=[rows.connection.pk], now=now, lease_s=30) == [rows.connection.pk]
    outcome = refresh(rows.connection.pk, claim_deadline(now, 30))
    assert outcome == "ok", outcome
    written = debug_log.getvalue()
    assert "httpcore.http11 send_request_headers" in written  # DEBUG lines were written
    assert "HTTP Request: GET" in written
    assert_no_credential(written, "the DEBUG log of a poll")


def test_the_log_filter_blanks_credentials_in_response_headers(debug_log: io.StringIO) -> None:
    """httpcore logs response headers at DEBUG; an upstream that sets or echoes a secret is blanked."""
    headers = [(b"Set-Cookie", f"session={CREDENTIAL}; Path=/".encode()), (b"Content-Type", b"json")]
    logging.getLogger("httpcore.http11").debug(
        "receive_response_headers.complete return_value=%r", (b"HTTP/1.1", 200, b"OK", headers)
    )
    logging.getLogger("ladder.test").warning("upstream said: Authorization: Bearer %s", CREDENTIAL)
    try:
        raise ValueError(f"header value {{'x-api-key': '{CREDENTIAL}'}}")
    except ValueError:
        logging.getLogger("ladder.test").exception("poll failed")
    written = debug_log.getvalue()
    assert written.count("[redacted]") >= 3, written
    assert "Content-Type" in written  # the rest of the line is kept
    assert_no_credential(written, "the log")


def test_the_filter_is_on_every_handler_settings_install() -> None:
    handlers = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    assert handlers
    assert all(any(isinstance(f, SecretRedactingFilter) for f in handler.filters) for handler in handlers)


def test_celery_workers_own_log_handlers_get_the_filter() -> None:
    """A Celery worker replaces the root logger's handlers with its own at start-up (setup_logging)."""
    from celery.signals import after_setup_logger

    stream = io.StringIO()
    logger = logging.getLogger("tests.security.celery-worker")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        after_setup_logger.send(
            sender=None, logger=logger, loglevel=logging.INFO, logfile=None, format="", colorize=False
        )
        logger.warning("poll failed: Authorization: Bearer %s", CREDENTIAL)
    finally:
        logger.removeHandler(handler)
    assert "[redacted]" in stream.getvalue()
    assert_no_credential(stream.getvalue(), "a Celery worker's log")


def metrics_text(client: Client) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "ladder_" in text
    return text


def test_a_structured_credential_reaches_no_export_metric_or_debug_log(
    upstream: FakeUpstream, superuser_client: Client, debug_log: io.StringIO
) -> None:
    """Issue 17: access and refresh tokens of a ladder-owned credential, refreshed once after a 401."""
    from devtools.fakeupstream import FakeUpstreamControl
    from ladder.services.credentials import credential_import

    m.Connection.objects.create(
        id="sec-oauth",
        provider="claude",
        auth_type="oauth",
        base_url=upstream.url_for("claude-oauth", "sec-oauth"),
    )
    with FakeUpstreamControl(upstream.url) as control:
        minted = control.mint_login("claude-oauth", lifetime_s=1)
        credential_import(connection_id="sec-oauth", text=json.dumps(minted["file"]), owner="ladder")
        import time

        time.sleep(1.2)
        now = timezone.now()
        connections_claim(connection_ids=["sec-oauth"], now=now, lease_s=60)
        assert refresh("sec-oauth", claim_deadline(now, 60)) == "ok"
        assert control.token_record()["summary"]["ok"] == 1
    row = m.Connection.objects.get(pk="sec-oauth")
    secrets = [minted["access_token"], minted["refresh_token"], row.get_credential()]
    out = io.StringIO()
    call_command("ladder_resolve", "--export", stdout=out)
    texts = {
        "export": out.getvalue(),
        "metrics": metrics_text(superuser_client),
        "debug log": debug_log.getvalue(),
        "connection page": superuser_client.get(
            reverse("ladder:connection_page", args=["sec-oauth"])
        ).content.decode(),
    }
    assert "credential refresh" in texts["debug log"]
    for where, text in texts.items():
        for secret in secrets:
            assert secret not in text, where
        assert row.refresh_ciphertext not in text, where
