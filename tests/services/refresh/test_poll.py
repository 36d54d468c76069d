"""One poll, fetched and stored under its claim (ladder.services.refresh.poll and .store)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from devtools.fakeupstream.scenarios import FaultMode
from ladder.models import Connection, FailureEvent, QuotaReading
from ladder.providers import ADAPTERS
from ladder.selectors.snapshot import readings_latest, state_version_get, state_versions_get
from ladder.services.refresh import fanout
from ladder.services.refresh.claim import connections_claim_due
from ladder.services.refresh.poll import Outcome
from tests.services.refresh.rows import KINDS, LEASE_S, claim, make_connection, refresh

pytestmark = pytest.mark.django_db


def test_it_stores_a_polled_reading_and_releases_the_claim(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1", provider_params={"note": "kept"})
    Connection.objects.filter(pk="c1").update(poll_backoff_level=3, last_poll_error="earlier")
    until = claim("c1")
    version, live = state_versions_get()

    assert refresh("c1", until) == "ok"

    reading = readings_latest()["c1"]
    assert [(w.name, w.remaining_pct) for w in reading.windows] == [("5h", 63), ("7d", 78), ("7d-sonnet", 96)]
    assert reading.verifiable
    assert reading.source == "poll"
    row = Connection.objects.get(pk="c1")
    assert row.claimed_until is None
    assert row.poll_backoff_level == 0
    assert row.last_poll_error == ""
    assert row.last_polled_at is not None
    assert row.next_refresh_at is not None
    assert row.next_refresh_at > timezone.now() + timedelta(seconds=50)
    # A reading is live state: the live version moves, the snapshot's version does not.
    assert state_versions_get() == (version, live + 1)
    assert row.live_seq == live + 1
    assert control.count("claude-oauth", connection="c1", call="usage") == 1


def test_it_drops_the_outcome_when_the_claim_was_taken_over(
    upstream: FakeUpstream, control: FakeUpstreamControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_connection(upstream, "c1")
    until = claim("c1")
    other = until + timedelta(seconds=5)

    def take_over(outcomes: list[Outcome], **kwargs: Any) -> list[Outcome]:
        # The lease lapsed during the poll and another worker claimed the connection.
        Connection.objects.filter(pk="c1").update(claimed_until=other)
        return outcomes

    monkeypatch.setattr(fanout, "outcomes_reauth", take_over)

    assert refresh("c1", until) == "claim_lost"
    assert not QuotaReading.objects.exists()
    assert Connection.objects.get(pk="c1").claimed_until == other


def test_it_does_nothing_without_the_claim(upstream: FakeUpstream, control: FakeUpstreamControl) -> None:
    make_connection(upstream, "c1")

    assert refresh("c1", timezone.now()) == "claim_lost"
    assert control.count("claude-oauth") == 0


def test_it_backs_the_poll_off_when_the_usage_endpoint_answers_429(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", "usage_endpoint_throttled", connection="c1")
    until = claim("c1")
    started = timezone.now()

    assert refresh("c1", until) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    assert row.poll_backoff_level == 1
    assert row.next_refresh_at is not None
    assert row.next_refresh_at >= started + timedelta(seconds=300)
    assert row.claimed_until is None
    assert row.enabled
    assert row.last_poll_error.startswith("rate_limited: rate_limited (HTTP 429)")
    assert not QuotaReading.objects.exists()
    event = FailureEvent.objects.get()
    assert (event.source, event.status, event.classification, event.retry_after_s) == (
        "poll",
        429,
        "rate_limited",
        300,
    )


def test_it_doubles_the_poll_backoff_without_retry_after(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    Connection.objects.filter(pk="c1").update(poll_backoff_level=2)
    control.error("claude-oauth", "http_429", connection="c1")
    started = timezone.now()

    assert refresh("c1", claim("c1")) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    assert row.poll_backoff_level == 3
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 60 * 8 <= wait_s <= 60 * 8 * 1.25 + 5


def test_it_backs_a_failed_poll_off_no_sooner_than_the_operators_minimum_interval(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    Connection.objects.filter(pk="c1").update(min_poll_interval_s=3600)
    control.error("claude-oauth", "http_429", connection="c1")
    started = timezone.now()

    assert refresh("c1", claim("c1")) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 3600 <= wait_s <= 3600 + 5  # the backoff alone would be 120–150 s


def test_it_disables_the_connection_when_the_credential_is_refused(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", "token_expired", connection="c1")
    before = state_version_get()

    assert refresh("c1", claim("c1")) == "auth_failed"

    row = Connection.objects.get(pk="c1")
    assert (row.enabled, row.disabled_reason, row.claimed_until, row.next_refresh_at) == (
        False,
        "auth_failed",
        None,
        None,
    )
    assert "auth_failed" in row.last_poll_error
    assert "HTTP 401" in row.last_poll_error
    assert FailureEvent.objects.get().classification == "auth_failed"
    assert state_version_get() == before + 1
    assert connections_claim_due(now=timezone.now(), limit=10, lease_s=LEASE_S) == []


@pytest.mark.parametrize("case", ["http_500", "http_503"])
def test_it_retries_a_5xx_soon_with_jitter(
    upstream: FakeUpstream, control: FakeUpstreamControl, case: str
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", case, connection="c1")
    started = timezone.now()

    assert refresh("c1", claim("c1")) == "transient"

    row = Connection.objects.get(pk="c1")
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 2.5 <= wait_s <= 7.6  # 5 s × [0.5, 1.5)
    assert row.poll_backoff_level == 1
    assert not QuotaReading.objects.exists()
    assert FailureEvent.objects.get().status == int(case.removeprefix("http_"))


def test_it_classifies_a_timeout_as_transient(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_connection(upstream, "c1")
    monkeypatch.setattr(ADAPTERS["claude-oauth"], "timeout", httpx.Timeout(0.3))
    control.slow(2000, kind="claude-oauth", connection="c1")

    assert refresh("c1", claim("c1")) == "transient"

    row = Connection.objects.get(pk="c1")
    assert "timeout" in row.last_poll_error
    assert "no HTTP answer" in row.last_poll_error
    assert FailureEvent.objects.get().status == 0
    assert not QuotaReading.objects.exists()


def test_it_classifies_a_dropped_connection_as_transient(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    control.fault("claude-oauth", "reset_connection", connection="c1")

    assert refresh("c1", claim("c1")) == "transient"
    assert "transport error" in Connection.objects.get(pk="c1").last_poll_error


@pytest.mark.parametrize(
    ("fault", "note"), [("malformed", "malformed JSON"), ("oversized", "exceeds 1048576 bytes")]
)
def test_it_stores_an_unreadable_answer_as_unverifiable_never_as_a_guess(
    upstream: FakeUpstream, control: FakeUpstreamControl, fault: FaultMode, note: str
) -> None:
    make_connection(upstream, "c1")
    assert refresh("c1", claim("c1")) == "ok"
    control.fault("claude-oauth", fault, connection="c1")

    assert refresh("c1", claim("c1")) == "unverifiable"

    latest = readings_latest()["c1"]
    assert not latest.verifiable
    assert latest.windows == ()
    assert note in latest.note
    row = Connection.objects.get(pk="c1")
    assert row.last_poll_error.startswith("unverifiable:")
    assert row.claimed_until is None


def test_it_skips_a_kind_without_a_quota_endpoint(upstream: FakeUpstream) -> None:
    make_connection(None, "g1", provider="groq", auth_type="apikey")
    started = timezone.now()

    assert refresh("g1", claim("g1")) == "skipped"

    row = Connection.objects.get(pk="g1")
    assert "no quota endpoint" in row.last_poll_error
    assert row.next_refresh_at is not None
    assert row.next_refresh_at >= started + timedelta(seconds=3600)
    assert not QuotaReading.objects.exists()
    assert not FailureEvent.objects.exists()


def test_it_skips_a_connection_without_a_credential(upstream: FakeUpstream) -> None:
    Connection.objects.create(
        id="c1", provider="claude", auth_type="oauth", base_url=upstream.url_for("claude-oauth")
    )

    assert refresh("c1", claim("c1")) == "skipped"
    assert "no credential" in Connection.objects.get(pk="c1").last_poll_error


def test_it_never_stores_or_logs_a_credential_quoted_by_a_transport_error(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-ant-oat01-SECRETSECRET"
    connection = make_connection(upstream, "c1")
    connection.set_credential(secret + "\n")  # bypasses the validation, as an old row could
    connection.save()

    with caplog.at_level("DEBUG"):
        outcome = refresh("c1", claim("c1"))

    assert outcome == "transient"
    row = Connection.objects.get(pk="c1")
    assert "transport error" in row.last_poll_error
    assert secret not in row.last_poll_error
    assert all(secret not in event.detail for event in FailureEvent.objects.all())
    ladder_logs = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("ladder"))
    assert "LocalProtocolError" in ladder_logs
    assert secret not in ladder_logs


ECHOED_KEY = "sk-proj-Z9y8X7w6V5u4T3s2R1q0ABCDEFGHIJ"
# Every polled kind whose adapter keeps the upstream's error message as the failure's detail.
QUOTING_KINDS = tuple(kind for kind in KINDS if kind not in ("copilot", "cursor"))


@pytest.mark.parametrize("case", ["echo_key", "echo_key_suffix"])
@pytest.mark.parametrize("kind", QUOTING_KINDS)
def test_it_strips_a_key_that_the_upstream_quotes_back_before_storing_or_logging_it(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    case: str,
) -> None:
    connection = make_connection(upstream, "c1", kind)
    connection.set_credential(ECHOED_KEY)
    connection.save()
    control.error(kind, case, connection="c1")

    with caplog.at_level("DEBUG"):
        refresh("c1", claim("c1"))

    detail = FailureEvent.objects.get().detail
    assert "Incorrect API key provided: " in detail
    assert "[redacted]" in detail  # the upstream did quote it
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for text in (detail, Connection.objects.get(pk="c1").last_poll_error, logged):
        assert ECHOED_KEY[-12:] not in text
