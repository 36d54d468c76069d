"""Credentials that stay alive, against the fake upstream's token endpoints over real HTTP: each kind's
lifecycle, one redemption per refresh token across concurrent refreshers (counted from the fake's own
record), a refused token → needs_reauth, a 401 on a poll → one refresh then a verifying poll, and a
gateway-owned credential never refreshed by the ladder."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from django.db import OperationalError
from django.db import connection as db_connection
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.models import Connection
from ladder.providers import ADAPTERS
from ladder.services.credential_refresh import (
    CAS_LOST,
    FRESH,
    IN_PROGRESS,
    NOT_OWNED,
    REFRESHED,
    REFUSED,
    credential_refresh,
    credential_refresh_after_401,
    credentials_due,
    credentials_refresh_due_run,
)
from ladder.services.credentials import credential_import
from ladder.services.failures import failure_record
from ladder.services.refresh.claim import claim_deadline, connections_claim, connections_claim_due
from tests.services.refresh.rows import refresh

pytestmark = pytest.mark.django_db

KINDS = ("claude-oauth", "codex-chatgpt", "gemini-cli", "antigravity", "kiro")
ROTATING = ("claude-oauth", "codex-chatgpt", "kiro")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http_client:
        yield http_client


def make_connection(upstream: FakeUpstream, cid: str, kind: str) -> Connection:
    adapter = ADAPTERS[kind]
    connection = Connection(
        id=cid, provider=adapter.provider, auth_type=adapter.auth_type, base_url=upstream.url_for(kind, cid)
    )
    connection.save()
    return connection


def login(
    control: FakeUpstreamControl,
    upstream: FakeUpstream,
    cid: str,
    kind: str,
    *,
    owner: str | None = "ladder",
    lifetime_s: float = 600,
    auth_method: str = "social",
) -> dict[str, Any]:
    make_connection(upstream, cid, kind)
    minted = control.mint_login(kind, lifetime_s=lifetime_s, auth_method=auth_method)
    credential_import(connection_id=cid, text=json.dumps(minted["file"]), owner=owner)
    return minted


def ok_redemptions(control: FakeUpstreamControl) -> int:
    return int(control.token_record()["summary"]["ok"])


@pytest.mark.parametrize(("kind", "auth_method"), [*((k, "social") for k in KINDS), ("kiro", "idc")])
def test_it_keeps_each_kind_alive_across_expiry(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    client: httpx.Client,
    kind: str,
    auth_method: str,
) -> None:
    minted = login(control, upstream, "c1", kind, lifetime_s=60, auth_method=auth_method)
    row = Connection.objects.get(pk="c1")
    assert row.credential_owner == "ladder"
    assert row.get_credential() == minted["access_token"]
    assert credentials_due(now=timezone.now()) == []

    later = timezone.now() + timedelta(seconds=45)  # past half the lifetime: within the lead
    assert credentials_due(now=later) == ["c1"]
    result = credential_refresh(connection_id="c1", client=client, now=later)

    assert result.outcome == REFRESHED
    row.refresh_from_db()
    assert row.get_credential() != minted["access_token"]
    assert row.refresh_claimed_until is None
    assert ok_redemptions(control) == 1
    # The new token polls.
    now = timezone.now()
    assert connections_claim(connection_ids=["c1"], now=now, lease_s=60) == ["c1"]
    assert refresh("c1", claim_deadline(now, 60)) == "ok"
    # A second sweep finds nothing due: nothing redeemed again.
    assert credential_refresh(connection_id="c1", client=client).outcome == FRESH
    assert ok_redemptions(control) == 1


@pytest.mark.parametrize("kind", ROTATING)
def test_a_reused_refresh_token_disables_as_needs_reauth_without_a_loop(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client, kind: str
) -> None:
    minted = login(control, upstream, "c1", kind, lifetime_s=60)
    # Another program redeems the same refresh token first (the operator handed a live CLI's file over).
    body_key = "refreshToken" if kind == "kiro" else "refresh_token"
    path = {"claude-oauth": "/v1/oauth/token", "codex-chatgpt": "/oauth/token", "kiro": "/refreshToken"}[kind]
    assert (
        client.post(upstream.url_for(kind) + path, json={body_key: minted["refresh_token"]}).status_code
        == 200
    )

    result = credential_refresh(connection_id="c1", client=client, force=True)

    assert result.outcome == REFUSED == "needs_reauth"
    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (False, "needs_reauth")
    assert "Log in again" in row.last_poll_error
    assert minted["refresh_token"] not in row.last_poll_error
    assert credentials_due(now=timezone.now() + timedelta(days=1)) == []
    # No loop: asking again redeems nothing.
    before = control.token_record()["summary"]["redemptions"]
    assert credential_refresh(connection_id="c1", client=client, force=True).outcome == "needs_reauth"
    assert control.token_record()["summary"]["redemptions"] == before
    # A new login clears it.
    fresh = control.mint_login(kind, lifetime_s=60)
    credential_import(connection_id="c1", text=json.dumps(fresh["file"]), owner="ladder")
    row.refresh_from_db()
    assert (row.enabled, row.disabled_reason) == (True, None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_401_on_a_poll_refreshes_once_then_verifies(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client, kind: str
) -> None:
    login(control, upstream, "c1", kind, lifetime_s=600)
    control.advance(601)  # the fake's access token expires; its usage endpoint answers 401

    now = timezone.now()
    assert connections_claim(connection_ids=["c1"], now=now, lease_s=60) == ["c1"]
    result = refresh("c1", claim_deadline(now, 60))

    assert result == "ok"
    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (True, None)
    assert ok_redemptions(control) == 1


def test_a_401_with_a_refused_refresh_token_is_needs_reauth(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    minted = login(control, upstream, "c1", "claude-oauth", lifetime_s=2)
    client.post(
        upstream.url_for("claude-oauth") + "/v1/oauth/token", json={"refresh_token": minted["refresh_token"]}
    )
    client.post(
        upstream.url_for("claude-oauth") + "/v1/oauth/token", json={"refresh_token": minted["refresh_token"]}
    )

    now = timezone.now()
    assert connections_claim(connection_ids=["c1"], now=now, lease_s=60) == ["c1"]
    result = refresh("c1", claim_deadline(now, 60))

    assert result == "auth_failed"
    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (False, "needs_reauth")


def test_a_401_with_nothing_to_refresh_with_disables_at_once(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    login(control, upstream, "c1", "claude-oauth", lifetime_s=600)
    Connection.objects.filter(pk="c1").update(refresh_ciphertext="")  # the refresh token is gone
    control.advance(601)  # the fake's access token expires; its usage endpoint answers 401

    now = timezone.now()
    assert connections_claim(connection_ids=["c1"], now=now, lease_s=60) == ["c1"]
    result = refresh("c1", claim_deadline(now, 60))

    # Not a transient failure retried forever with a dead token: the 401 stands (DESIGN L7).
    assert result == "auth_failed"
    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (False, "auth_failed")
    assert ok_redemptions(control) == 0


def test_the_ladder_never_refreshes_a_gateway_owned_credential(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    login(control, upstream, "c1", "claude-oauth", owner="gateway", lifetime_s=600)
    assert Connection.objects.get(pk="c1").refresh_ciphertext == ""
    control.advance(601)  # the fake's access token expires

    assert credentials_due(now=timezone.now() + timedelta(days=1)) == []
    assert credential_refresh(connection_id="c1", client=client, force=True).outcome == NOT_OWNED
    now = timezone.now()
    assert connections_claim(connection_ids=["c1"], now=now, lease_s=60) == ["c1"]
    assert refresh("c1", claim_deadline(now, 60)) == "auth_failed"

    assert control.token_record()["summary"]["redemptions"] == 0
    assert Connection.objects.get(pk="c1").disabled_reason == "auth_failed"


def test_a_lapsed_claim_is_taken_over(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    login(control, upstream, "c1", "claude-oauth", lifetime_s=60)
    # A claimer that died mid-refresh: its lease lies in the past.
    Connection.objects.filter(pk="c1").update(refresh_claimed_until=timezone.now() - timedelta(seconds=1))

    result = credential_refresh(connection_id="c1", client=client, now=timezone.now() + timedelta(seconds=45))

    assert result.outcome == REFRESHED


def test_a_held_claim_makes_the_loser_wait_and_reread(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    login(control, upstream, "c1", "claude-oauth", lifetime_s=60)
    Connection.objects.filter(pk="c1").update(refresh_claimed_until=timezone.now() + timedelta(seconds=30))

    result = credential_refresh(connection_id="c1", client=client, force=True, wait_s=0.1)

    assert result.outcome == IN_PROGRESS
    assert control.token_record()["summary"]["redemptions"] == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshers_redeem_each_token_exactly_once(
    upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    """Two beat workers and two gateway fetchers, across several expiries of five rotating accounts."""
    settings.LADDER_CREDENTIAL_WAIT_S = 2.0
    for index, kind in enumerate((*ROTATING, "claude-oauth", "codex-chatgpt")):
        login(control, upstream, f"c{index}", kind, lifetime_s=1.0)
    ids = [f"c{index}" for index in range(5)]
    stop = time.monotonic() + 2.0
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def retrying(call: Any) -> Any:
        for _ in range(400):
            try:
                return call()
            except OperationalError:  # SQLite's shared in-memory test database: "table is locked"
                time.sleep(0.005)
        raise AssertionError("the database stayed locked")

    def worker() -> None:
        try:
            with httpx.Client() as http:
                while time.monotonic() < stop:
                    got = retrying(lambda: credentials_refresh_due_run(client=http))
                    with lock:
                        outcomes.update(got)
                    time.sleep(0.02)
        except BaseException as exc:
            errors.append(exc)
        finally:
            db_connection.close()

    def gateway() -> None:
        try:
            with httpx.Client() as http:
                while time.monotonic() < stop:
                    for cid in ids:
                        got = retrying(lambda cid=cid: credential_refresh(connection_id=cid, client=http))
                        with lock:
                            outcomes[got.outcome] += 1
        except BaseException as exc:
            errors.append(exc)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=target) for target in (worker, worker, gateway, gateway)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    summary = control.token_record()["summary"]
    assert summary["ok"] >= 10, summary  # several expiries of every account
    assert summary["reused"] == summary["revoked"] == summary["unknown"] == 0, summary
    assert summary["single_use_redeemed_twice"] == 0
    assert outcomes[REFRESHED] == summary["ok"]
    assert outcomes[CAS_LOST] == 0
    assert not Connection.objects.filter(disabled_reason__isnull=False).exists()


def test_no_secret_reaches_the_log(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    minted = login(control, upstream, "c1", "claude-oauth", lifetime_s=600)
    credential_refresh(connection_id="c1", client=client, force=True)
    row = Connection.objects.get(pk="c1")
    secrets = [minted["access_token"], minted["refresh_token"], row.get_credential()]
    control.advance(601)  # the fake's access token expires
    now = timezone.now()
    connections_claim(connection_ids=["c1"], now=now, lease_s=60)
    refresh("c1", claim_deadline(now, 60))
    client.post(
        upstream.url_for("claude-oauth") + "/v1/oauth/token", json={"refresh_token": minted["refresh_token"]}
    )
    credential_refresh(connection_id="c1", client=client, force=True)

    text = caplog.text + Connection.objects.get(pk="c1").last_poll_error
    assert "credential refresh" in caplog.text
    for secret in secrets:
        assert secret
        assert secret not in text


def report_401(connection_id: str, now: datetime) -> None:
    failure_record(
        connection_id=connection_id, status=401, headers={}, body=None, model=None, observed_at=now, now=now
    )


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The polls a reported 401 queues through Redis; none of them runs (a dropped enqueue)."""
    asked: list[list[str]] = []

    def dropped(*, connection_ids: list[str]) -> list[str]:
        asked.append(list(connection_ids))
        return []

    monkeypatch.setattr("ladder.services.failures.refresh_request", dropped)
    return asked


def imported_a_while_ago(*ids: str) -> None:
    """Out of the reported-401 cooldown, which runs from the credential's last renewal."""
    Connection.objects.filter(pk__in=ids).update(credential_updated_at=timezone.now() - timedelta(minutes=2))


def test_a_reported_401_on_a_ladder_owned_credential_refreshes_before_disabling(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client, queued: list[list[str]]
) -> None:
    login(control, upstream, "c1", "claude-oauth", lifetime_s=3 * 3600)
    login(control, upstream, "g1", "claude-oauth", owner="gateway", lifetime_s=3 * 3600)
    imported_a_while_ago("c1", "g1")
    now = timezone.now()
    assert credentials_due(now=now) == []
    control.advance(3 * 3600 + 1)  # the fake's access tokens expire early: its endpoints answer 401

    for cid in ("c1", "g1"):
        report_401(cid, now)

    assert queued == [["c1"]]
    assert Connection.objects.get(pk="c1").enabled
    assert Connection.objects.get(pk="g1").disabled_reason == "auth_failed"
    # The queued poll never ran. The database holds the refresh: the credential beat redeems it once,
    # and the fan-out's verifying poll reads quota with the new token.
    assert credentials_due(now=now) == ["c1"]
    assert credentials_refresh_due_run(client=client) == Counter({REFRESHED: 1})
    assert connections_claim_due(now=now, limit=10, lease_s=60) == ["c1"]
    assert refresh("c1", claim_deadline(now, 60)) == "ok"
    assert ok_redemptions(control) == 1
    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason) == (True, None)


def test_repeated_401_reports_schedule_one_refresh_per_cooldown(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    client: httpx.Client,
    queued: list[list[str]],
    settings: Any,
) -> None:
    settings.LADDER_CREDENTIAL_401_COOLDOWN_S = 60
    login(control, upstream, "c1", "claude-oauth", lifetime_s=600)
    imported_a_while_ago("c1")
    now = timezone.now()

    for _ in range(5):
        report_401("c1", now)
    assert queued == [["c1"]]  # marked once: the later reports find it already due
    assert credentials_refresh_due_run(client=client)[REFRESHED] == 1
    for _ in range(5):  # reports about the old token, within the cooldown of its renewal
        report_401("c1", timezone.now())

    assert queued == [["c1"]]
    assert credentials_due(now=timezone.now()) == []
    assert credentials_refresh_due_run(client=client) == Counter()
    assert ok_redemptions(control) == 1
    # Past the cooldown, a new 401 schedules one refresh again.
    later = timezone.now() + timedelta(seconds=61)
    report_401("c1", later)
    assert queued == [["c1"], ["c1"]]
    assert credentials_due(now=later) == ["c1"]


def test_a_reported_401_brings_the_poll_forward_no_sooner_than_its_floor(
    upstream: FakeUpstream, control: FakeUpstreamControl, queued: list[list[str]], settings: Any
) -> None:
    settings.LADDER_POLL_FLOOR_S = {"claude": 300}
    login(control, upstream, "c1", "claude-oauth", lifetime_s=600)
    login(control, upstream, "c2", "claude-oauth", lifetime_s=600)
    imported_a_while_ago("c1", "c2")
    now = timezone.now()
    polled = now - timedelta(seconds=10)
    far = now + timedelta(hours=2)
    Connection.objects.filter(pk="c1").update(last_polled_at=polled, next_refresh_at=far)
    # c2's usage endpoint throttled its poller (Retry-After 2 h): a report does not shorten that.
    Connection.objects.filter(pk="c2").update(
        last_polled_at=polled, next_refresh_at=far, poll_backoff_level=2
    )

    report_401("c1", now)
    report_401("c2", now)

    assert Connection.objects.get(pk="c1").next_refresh_at == polled + timedelta(seconds=300)
    assert Connection.objects.get(pk="c2").next_refresh_at == far
    assert credentials_due(now=now) == ["c1", "c2"]  # the refresh itself is not held back


def test_a_401_about_a_token_rotated_meanwhile_schedules_nothing(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    login(control, upstream, "c1", "claude-oauth", lifetime_s=600)
    imported_a_while_ago("c1")
    seen = Connection.objects.get(pk="c1")  # what the report's handler read
    assert credential_refresh(connection_id="c1", client=client, force=True).outcome == REFRESHED
    imported_a_while_ago("c1")
    expires_at = Connection.objects.get(pk="c1").credential_expires_at

    assert not credential_refresh_after_401(connection=seen, now=timezone.now())

    assert Connection.objects.get(pk="c1").credential_expires_at == expires_at
