from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import redis
from celery import current_app
from django.db import OperationalError
from django.db import connection as db_connection
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.models import Connection, FailureEvent, QuotaReading
from ladder.providers import ADAPTERS
from ladder.selectors.snapshot import live_state_since, readings_latest, state_version_get, state_versions_get
from ladder.services import enqueue, hotstate
from ladder.services.refresh import (
    claim_deadline,
    connection_refresh,
    connections_claim,
    connections_claim_due,
    connections_refresh_many,
    refresh_connections_run,
    refresh_is_pending,
    refresh_pending_key,
    refresh_request,
)

pytestmark = pytest.mark.django_db

LEASE_S = 60.0
# Every kind whose adapter polls a quota endpoint that the fake upstream serves.
KINDS = (
    "claude-oauth",
    "codex-chatgpt",
    "copilot",
    "gemini-cli",
    "antigravity",
    "kiro",
    "cursor",
    "zai-glm",
    "kimi-coding",
    "minimax-coding",
    "openrouter",
    "moonshot-api",
)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http_client:
        yield http_client


def make_connection(
    upstream: FakeUpstream | None, cid: str, kind: str = "claude-oauth", **fields: Any
) -> Connection:
    adapter = ADAPTERS[kind]
    provider = fields.pop("provider", adapter.provider)
    auth_type = fields.pop("auth_type", adapter.auth_type)
    connection = Connection(
        id=cid,
        provider=provider,
        auth_type=auth_type,
        base_url=upstream.url_for(kind, cid) if upstream is not None else None,
        **fields,
    )
    connection.set_credential(f"token-{cid}")
    connection.save()
    return connection


def claim(cid: str) -> datetime:
    now = timezone.now()
    assert connections_claim(connection_ids=[cid], now=now, lease_s=LEASE_S) == [cid]
    return claim_deadline(now, LEASE_S)


# --- claims ----------------------------------------------------------------------------------


def test_it_claims_only_due_enabled_unclaimed_connections() -> None:
    now = timezone.now()
    make_connection(None, "never-polled")
    make_connection(None, "overdue", next_refresh_at=now - timedelta(seconds=5))
    make_connection(None, "not-yet", next_refresh_at=now + timedelta(seconds=5))
    make_connection(None, "disabled", enabled=False)
    make_connection(None, "keyless", keyless=True)
    make_connection(None, "held", claimed_until=now + timedelta(seconds=30))
    make_connection(None, "lapsed", claimed_until=now - timedelta(seconds=1))

    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    assert sorted(claimed) == ["lapsed", "never-polled", "overdue"]
    assert set(
        Connection.objects.filter(claimed_until=claim_deadline(now, LEASE_S)).values_list("id", flat=True)
    ) == {
        "lapsed",
        "never-polled",
        "overdue",
    }
    assert connections_claim_due(now=now + timedelta(seconds=1), limit=10, lease_s=LEASE_S) == []


def test_it_claims_no_more_than_the_limit_most_overdue_first() -> None:
    now = timezone.now()
    for index in range(5):
        make_connection(None, f"c{index}", next_refresh_at=now - timedelta(seconds=index))

    assert connections_claim_due(now=now, limit=2, lease_s=LEASE_S) == ["c4", "c3"]


def test_it_claims_named_connections_even_when_not_due() -> None:
    now = timezone.now()
    make_connection(None, "later", next_refresh_at=now + timedelta(hours=1))
    make_connection(None, "held", claimed_until=now + timedelta(seconds=30))

    assert connections_claim(connection_ids=["later", "held", "unknown"], now=now, lease_s=LEASE_S) == [
        "later"
    ]


def test_it_leaves_a_backed_off_poll_alone_even_when_a_refresh_is_asked_for() -> None:
    now = timezone.now()
    make_connection(None, "throttled", poll_backoff_level=2, next_refresh_at=now + timedelta(seconds=300))
    make_connection(None, "backoff-over", poll_backoff_level=2, next_refresh_at=now - timedelta(seconds=1))

    assert connections_claim(connection_ids=["throttled", "backoff-over"], now=now, lease_s=LEASE_S) == [
        "backoff-over"
    ]


def test_it_waits_for_the_operators_minimum_interval_when_a_refresh_is_asked_for() -> None:
    now = timezone.now()
    make_connection(None, "recent", min_poll_interval_s=300, last_polled_at=now - timedelta(seconds=299))
    make_connection(None, "floor-over", min_poll_interval_s=300, last_polled_at=now - timedelta(seconds=300))
    make_connection(None, "no-floor", last_polled_at=now - timedelta(seconds=1))

    claimed = connections_claim(connection_ids=["recent", "floor-over", "no-floor"], now=now, lease_s=LEASE_S)

    assert claimed == ["floor-over", "no-floor"]


def test_it_reclaims_a_killed_workers_connection_once_its_lease_lapses() -> None:
    now = timezone.now()
    make_connection(None, "c1")
    assert connections_claim_due(now=now, limit=10, lease_s=LEASE_S) == ["c1"]

    assert connections_claim_due(now=now + timedelta(seconds=LEASE_S - 1), limit=10, lease_s=LEASE_S) == []
    assert connections_claim_due(now=now + timedelta(seconds=LEASE_S + 1), limit=10, lease_s=LEASE_S) == [
        "c1"
    ]


@pytest.mark.django_db(transaction=True)
def test_it_never_hands_one_connection_to_two_concurrent_claimants() -> None:
    for index in range(60):
        make_connection(None, f"c{index:02d}")
    start = threading.Barrier(4)
    results: list[list[str]] = []
    lock = threading.Lock()

    def claimant(offset_us: int) -> None:
        try:
            start.wait()
            now = timezone.now() + timedelta(microseconds=offset_us)
            for _ in range(200):
                try:
                    got = connections_claim_due(now=now, limit=60, lease_s=LEASE_S)
                    break
                except OperationalError:  # SQLite's shared in-memory test database: "table is locked"
                    time.sleep(0.005)
            with lock:
                results.append(got)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=claimant, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    claimed = [cid for got in results for cid in got]
    assert len(results) == 4
    assert sorted(claimed) == [f"c{index:02d}" for index in range(60)]


# --- one poll ------------------------------------------------------------------------------


def test_it_stores_a_polled_reading_and_releases_the_claim(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1", provider_params={"note": "kept"})
    Connection.objects.filter(pk="c1").update(poll_backoff_level=3, last_poll_error="earlier")
    until = claim("c1")
    version, live = state_versions_get()

    assert connection_refresh(connection_id="c1", claim_until=until, client=client) == "ok"

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
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    until = claim("c1")
    other = until + timedelta(seconds=5)

    def take_over(request: httpx.Request) -> None:  # the lease lapsed and another worker claimed it
        Connection.objects.filter(pk="c1").update(claimed_until=other)

    client.event_hooks["request"] = [take_over]

    assert connection_refresh(connection_id="c1", claim_until=until, client=client) == "claim_lost"
    assert not QuotaReading.objects.exists()
    assert Connection.objects.get(pk="c1").claimed_until == other


def test_it_does_nothing_without_the_claim(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")

    assert connection_refresh(connection_id="c1", claim_until=timezone.now(), client=client) == "claim_lost"
    assert control.count("claude-oauth") == 0


def test_it_backs_the_poll_off_when_the_usage_endpoint_answers_429(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", "usage_endpoint_throttled", connection="c1")
    until = claim("c1")
    started = timezone.now()

    assert connection_refresh(connection_id="c1", claim_until=until, client=client) == "rate_limited"

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
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    Connection.objects.filter(pk="c1").update(poll_backoff_level=2)
    control.error("claude-oauth", "http_429", connection="c1")
    started = timezone.now()

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    assert row.poll_backoff_level == 3
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 60 * 8 <= wait_s <= 60 * 8 * 1.25 + 5


def test_it_backs_a_failed_poll_off_no_sooner_than_the_operators_minimum_interval(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    Connection.objects.filter(pk="c1").update(min_poll_interval_s=3600)
    control.error("claude-oauth", "http_429", connection="c1")
    started = timezone.now()

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "rate_limited"

    row = Connection.objects.get(pk="c1")
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 3600 <= wait_s <= 3600 + 5  # the backoff alone would be 120–150 s


def test_it_disables_the_connection_when_the_credential_is_refused(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", "token_expired", connection="c1")
    before = state_version_get()

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "auth_failed"

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
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client, case: str
) -> None:
    make_connection(upstream, "c1")
    control.error("claude-oauth", case, connection="c1")
    started = timezone.now()

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "transient"

    row = Connection.objects.get(pk="c1")
    wait_s = (row.next_refresh_at - started).total_seconds() if row.next_refresh_at else 0
    assert 2.5 <= wait_s <= 7.6  # 5 s × [0.5, 1.5)
    assert row.poll_backoff_level == 1
    assert not QuotaReading.objects.exists()
    assert FailureEvent.objects.get().status == int(case.removeprefix("http_"))


def test_it_classifies_a_timeout_as_transient(
    upstream: FakeUpstream,
    control: FakeUpstreamControl,
    client: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_connection(upstream, "c1")
    monkeypatch.setattr(ADAPTERS["claude-oauth"], "timeout", httpx.Timeout(0.3))
    control.slow(2000, kind="claude-oauth", connection="c1")

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "transient"

    row = Connection.objects.get(pk="c1")
    assert "timeout" in row.last_poll_error
    assert "no HTTP answer" in row.last_poll_error
    assert FailureEvent.objects.get().status == 0
    assert not QuotaReading.objects.exists()


def test_it_classifies_a_dropped_connection_as_transient(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client
) -> None:
    make_connection(upstream, "c1")
    control.fault("claude-oauth", "reset_connection", connection="c1")

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "transient"
    assert "transport error" in Connection.objects.get(pk="c1").last_poll_error


@pytest.mark.parametrize(
    ("fault", "note"), [("malformed", "malformed JSON"), ("oversized", "exceeds 1048576 bytes")]
)
def test_it_stores_an_unreadable_answer_as_unverifiable_never_as_a_guess(
    upstream: FakeUpstream, control: FakeUpstreamControl, client: httpx.Client, fault: str, note: str
) -> None:
    make_connection(upstream, "c1")
    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "ok"
    control.scenario("claude-oauth", fault, connection="c1")

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "unverifiable"

    latest = readings_latest()["c1"]
    assert not latest.verifiable
    assert latest.windows == ()
    assert note in latest.note
    row = Connection.objects.get(pk="c1")
    assert row.last_poll_error.startswith("unverifiable:")
    assert row.claimed_until is None


def test_it_skips_a_kind_without_a_quota_endpoint(upstream: FakeUpstream, client: httpx.Client) -> None:
    make_connection(None, "g1", provider="groq", auth_type="apikey")
    started = timezone.now()

    assert connection_refresh(connection_id="g1", claim_until=claim("g1"), client=client) == "skipped"

    row = Connection.objects.get(pk="g1")
    assert "no quota endpoint" in row.last_poll_error
    assert row.next_refresh_at is not None
    assert row.next_refresh_at >= started + timedelta(seconds=3600)
    assert not QuotaReading.objects.exists()
    assert not FailureEvent.objects.exists()


def test_it_skips_a_connection_without_a_credential(upstream: FakeUpstream, client: httpx.Client) -> None:
    Connection.objects.create(
        id="c1", provider="claude", auth_type="oauth", base_url=upstream.url_for("claude-oauth")
    )

    assert connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client) == "skipped"
    assert "no credential" in Connection.objects.get(pk="c1").last_poll_error


# --- many polls ----------------------------------------------------------------------------


def test_it_refreshes_many_connections_of_every_kind_concurrently(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    ids = []
    for kind in KINDS:
        for index in range(3):
            make_connection(upstream, f"{kind}-{index}", kind)
            ids.append(f"{kind}-{index}")
    control.slow(500)
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=1000, lease_s=LEASE_S)
    assert sorted(claimed) == sorted(ids)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S), concurrency=64)

    assert summary.claimed == len(ids)
    assert summary.outcomes == {"ok": len(ids)}
    # Serial would take 36 × ≥ 0.5 s = 18 s (gemini and antigravity make two calls); at once, the
    # slowest kind's two calls (1 s) and the database writes: 2–3 s here, PostgreSQL under a full run.
    assert summary.elapsed_s < 6.0
    latest = readings_latest()
    assert set(latest) == set(ids)
    assert all(r.verifiable for r in latest.values())
    assert not Connection.objects.filter(claimed_until__isnull=False).exists()


def test_it_caps_the_polls_in_flight_per_provider(
    upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    for index in range(4):
        make_connection(upstream, f"c{index}")
    control.slow(1000, kind="claude-oauth")  # long beside the writes, so the rounds stand out

    def run(cap: int) -> float:
        settings.LADDER_REFRESH_PROVIDER_CONCURRENCY = {"claude": cap}
        now = timezone.now()
        claimed = connections_claim(connection_ids=[f"c{i}" for i in range(4)], now=now, lease_s=LEASE_S)
        summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S), concurrency=8)
        assert summary.outcomes == {"ok": 4}
        return summary.elapsed_s

    assert run(1) >= 4 * 1.0  # one at a time
    assert run(4) < 2 * 1.0  # all four at once: one round, where a cap of 2 or less would take two


def test_it_hands_back_unpolled_claims_at_its_deadline(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    for index in range(3):
        make_connection(upstream, f"c{index}")
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S), deadline_s=0)

    assert summary.outcomes == {"released": 3}
    assert not Connection.objects.filter(claimed_until__isnull=False).exists()
    assert control.count("claude-oauth") == 0
    assert connections_claim_due(now=timezone.now(), limit=10, lease_s=LEASE_S) == sorted(claimed)


def test_it_keeps_going_when_some_upstreams_fail(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    for cid in ("ok1", "ok2", "down", "bad", "gone"):
        make_connection(upstream, cid)
    control.error("claude-oauth", "http_502", connection="down")
    control.fault("claude-oauth", "malformed", connection="bad")
    control.error("claude-oauth", "token_expired", connection="gone")
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    summary = connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))

    assert summary.outcomes == {"ok": 2, "transient": 1, "unverifiable": 1, "auth_failed": 1}
    assert set(readings_latest()) == {"ok1", "ok2", "bad"}


def test_it_stamps_the_live_version_of_refreshed_connections(
    upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    make_connection(upstream, "c1")
    make_connection(upstream, "c2")
    version, live = state_versions_get()
    now = timezone.now()
    claimed = connections_claim_due(now=now, limit=10, lease_s=LEASE_S)

    connections_refresh_many(claimed, claim_until=claim_deadline(now, LEASE_S))

    after, after_live = state_versions_get()
    assert after == version  # readings are live state: the snapshot is not reloaded for them
    assert live < after_live <= live + 2  # one bump per batch of outcomes written
    live_state = live_state_since(live)
    assert {cid: reading for cid, (_, reading) in live_state.items()} == readings_latest()


# --- refreshes asked for by resolutions ----------------------------------------------------


def test_it_queues_a_requested_refresh_once_on_commit(
    hot: redis.Redis, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[str]] = []

    def record(name: str, *, args: list[Any], **kwargs: Any) -> bool:
        assert name == "ladder.tasks.refresh_connections"
        sent.append(args[0])
        return True

    monkeypatch.setattr(enqueue, "task_send", record)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert refresh_request(connection_ids=["c1", "c2", "c1"]) == ["c1", "c2"]
        assert sent == []  # only once the transaction commits
        assert refresh_request(connection_ids=["c2", "c3"]) == ["c3"]

    assert len(callbacks) == 2
    assert sent == [["c1", "c2"], ["c3"]]
    assert 0 < (hot.ttl(refresh_pending_key("c1")) or 0) <= 30


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_it_skips_a_requested_refresh_without_raising_when_redis_is_down(settings: Any) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    hotstate.mark_up()
    started = time.monotonic()

    assert refresh_request(connection_ids=["c1"]) == []
    assert refresh_request(connection_ids=["c1"]) == []

    assert time.monotonic() - started < 1.5
    hotstate.mark_up()


def test_it_forgets_the_request_when_the_broker_refuses_it(
    hot: redis.Redis, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise BrokerOperationalError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)

    with django_capture_on_commit_callbacks(execute=True):
        assert refresh_request(connection_ids=["c1"]) == ["c1"]

    assert hot.get(refresh_pending_key("c1")) is None
    assert refresh_request(connection_ids=["c1"]) == ["c1"]


def test_it_tells_a_requested_refresh_pending_until_the_run_ends(
    hot: redis.Redis, upstream: FakeUpstream, control: FakeUpstreamControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_connection(upstream, "c1")
    monkeypatch.setattr(enqueue, "task_send", lambda name, **kwargs: True)
    assert not refresh_is_pending(connection_id="c1")

    assert refresh_request(connection_ids=["c1"]) == ["c1"]
    assert refresh_is_pending(connection_id="c1")
    assert not refresh_is_pending(connection_id="c2")

    refresh_connections_run(["c1"], lease_s=30.0)

    assert not refresh_is_pending(connection_id="c1")
    assert control.count("claude-oauth", connection="c1") == 1


def test_it_tells_no_refresh_pending_when_redis_is_down(settings: Any) -> None:
    settings.LADDER_HOTSTATE_REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    hotstate.mark_up()

    assert not refresh_is_pending(connection_id="c1")

    hotstate.mark_up()


def test_it_makes_the_claim_token_from_the_claim_time_and_lease() -> None:
    now = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)

    assert claim_deadline(now, 60) == now + timedelta(seconds=60)
    assert claim_deadline(now + timedelta(microseconds=1), 60) != claim_deadline(now, 60)


def test_it_never_stores_or_logs_a_credential_quoted_by_a_transport_error(
    upstream: FakeUpstream, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-ant-oat01-SECRETSECRET"
    connection = make_connection(upstream, "c1")
    connection.set_credential(secret + "\n")  # bypasses the validation, as an old row could
    connection.save()

    with caplog.at_level("DEBUG"):
        outcome = connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client)

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
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    case: str,
) -> None:
    connection = make_connection(upstream, "c1", kind)
    connection.set_credential(ECHOED_KEY)
    connection.save()
    control.error(kind, case, connection="c1")

    with caplog.at_level("DEBUG"):
        connection_refresh(connection_id="c1", claim_until=claim("c1"), client=client)

    detail = FailureEvent.objects.get().detail
    assert "Incorrect API key provided: " in detail
    assert "[redacted]" in detail  # the upstream did quote it
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for text in (detail, Connection.objects.get(pk="c1").last_poll_error, logged):
        assert ECHOED_KEY[-12:] not in text
