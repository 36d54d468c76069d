"""LadderClient against a running ladder: every call, and every way a call can fail."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder import models as m
from ladder.services.credentials import credential_import
from ladder.services.tokens import gateway_token_create
from ladder_client import (
    Candidate,
    LadderClient,
    LadderError,
    Reading,
    Resolution,
    UsageEvent,
)
from tests.ladder_client.conftest import (
    CANDIDATES,
    CHEAP,
    CHEAP_MODEL,
    PLAN,
    PLAN_MODEL,
    CountingTransport,
    Ladder,
    claude_headers,
)

ROOT = Path(__file__).resolve().parents[2]


# --- resolve ----------------------------------------------------------------------------------


def test_it_resolves_a_pool_from_the_catalog(ladder: Ladder) -> None:
    with ladder.client() as client:
        resolution = client.resolve("auto/thrifty")

    assert isinstance(resolution, Resolution)
    assert resolution.grouping == "thrifty"
    assert resolution.resolved_at.tzinfo is not None
    # The plan has no reading: admitted on rung 0 (fail open) and asked to refresh.
    assert [(e.provider, e.model, e.rung, e.allowed_connection_ids) for e in resolution.pool] == [
        (*PLAN_MODEL, "subscription", (PLAN,)),
        (*CHEAP_MODEL, "cheap", (CHEAP,)),
    ]
    assert resolution.empty is None
    assert resolution.refresh == (PLAN,)
    assert ladder.refreshes.calls == [[PLAN]]


def test_it_sends_the_gateways_candidates_in_their_order(ladder: Ladder) -> None:
    cheap_first = (
        Candidate(*CHEAP_MODEL, connection_id=CHEAP, allowed_connection_ids=(CHEAP,)),
        Candidate(*PLAN_MODEL, connection_id=None, allowed_connection_ids=("nobody", PLAN)),
    )
    with ladder.client() as client:
        resolution = client.resolve("auto/thrifty", cheap_first)

    # Rung order wins over candidate order; the unknown connection is explained, never routed.
    assert [(e.rung_index, e.connection_id, e.allowed_connection_ids) for e in resolution.pool] == [
        (0, None, (PLAN,)),
        (3, CHEAP, (CHEAP,)),
    ]
    assert [(x.connection_id, x.reason, x.rung) for x in resolution.excluded] == [
        ("nobody", "unknown_connection", None)
    ]


def test_it_returns_an_empty_pool_with_its_reason_and_retry_time(ladder: Ladder) -> None:
    reset_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    with ladder.client() as client:
        client.report_observation(PLAN, claude_headers(utilization=1.0, reset_at=reset_at, status="rejected"))
        resolution = client.resolve("auto/subscription", CANDIDATES[:1])

    assert resolution.pool == ()
    assert resolution.empty is not None
    assert resolution.empty.code == "no_verified_subscription_quota"
    assert resolution.empty.retry_at == reset_at
    assert [x.reason for x in resolution.excluded] == ["quota_exhausted"]


def test_it_raises_the_apis_400_for_an_invalid_model(ladder: Ladder) -> None:
    with ladder.client() as client, pytest.raises(LadderError) as raised:
        client.resolve("auto/coding:warp")

    error = raised.value
    assert (error.status, error.code, error.field) == (400, "invalid_model", "model")
    assert "warp" in error.message
    assert "thrifty" in error.message
    assert error.retry_after_s is None
    assert str(error).startswith("HTTP 400 invalid_model:")


# --- tokens -----------------------------------------------------------------------------------


def test_it_raises_401_for_an_unknown_token(ladder: Ladder) -> None:
    with (
        LadderClient(ladder.url, "olr_not-a-real-token-at-all") as client,
        pytest.raises(LadderError) as raised,
    ):
        client.resolve("auto/thrifty")

    assert (raised.value.status, raised.value.code) == (401, "invalid_token")


def test_it_raises_403_when_the_token_lacks_the_scope(ladder: Ladder) -> None:
    _, resolve_only = gateway_token_create(name="resolver", scope_resolve=True, scope_report=False)
    event = UsageEvent(request_id="r-1", connection_id=CHEAP, model=CHEAP_MODEL[1], input_tokens=1)

    with LadderClient(ladder.url, resolve_only) as client:
        assert client.resolve("auto/thrifty").pool  # the scope it has works
        with pytest.raises(LadderError) as raised:
            client.report_usage(event)

    assert (raised.value.status, raised.value.code) == (403, "insufficient_scope")
    assert "report" in raised.value.message


def test_it_never_shows_the_token(ladder: Ladder) -> None:
    client = ladder.client()
    assert ladder.token not in repr(client)
    client.close()


# --- usage ------------------------------------------------------------------------------------


def test_it_reports_one_usage_event_and_reads_the_budgets(ladder: Ladder) -> None:
    from ladder.services.state import configuration_update

    configuration_update(rung_budget_usd={"cheap": 5.0})
    at = datetime.now(UTC).replace(microsecond=0)
    event = UsageEvent(
        request_id="req-1", connection_id=CHEAP, model=CHEAP_MODEL[1], input_tokens=1_000_000, occurred_at=at
    )
    with ladder.client() as client:
        report = client.report_usage(event)

    (recorded,) = report.events
    assert (recorded.request_id, recorded.rung, recorded.rung_index, recorded.budget_rung) == (
        "req-1",
        "cheap",
        3,
        "cheap",
    )
    assert recorded.occurred_at == at
    assert recorded.cost_usd == pytest.approx(0.15)  # priced from the catalog: 1 M input tokens
    assert report.budgets["cheap"].budget_usd == 5.0
    assert report.budgets["cheap"].spent_usd == pytest.approx(0.15)


def test_it_reports_a_batch_and_a_replay_counts_once(ladder: Ladder) -> None:
    events = [
        UsageEvent(request_id="b-1", connection_id=CHEAP, model=CHEAP_MODEL[1], cost_usd=0.25),
        UsageEvent(request_id="b-2", connection_id=PLAN, model=PLAN_MODEL[1], input_tokens=10, cost_usd=0.5),
    ]
    with ladder.client() as client:
        first = client.report_usage(events)
        again = client.report_usage(events)

    assert [(e.request_id, e.rung, e.budget_cost_usd) for e in first.events] == [
        ("b-1", "cheap", 0.25),
        ("b-2", "subscription", 0.0),  # plan usage costs the budget nothing
    ]
    assert again.events == first.events
    assert again.budgets["cheap"].spent_usd == pytest.approx(0.25)


def test_it_raises_409_for_a_request_id_reused_with_another_payload(ladder: Ladder) -> None:
    with ladder.client() as client:
        client.report_usage(
            UsageEvent(request_id="dup", connection_id=CHEAP, model=CHEAP_MODEL[1], cost_usd=1)
        )
        with pytest.raises(LadderError) as raised:
            client.report_usage(
                UsageEvent(request_id="dup", connection_id=CHEAP, model=CHEAP_MODEL[1], cost_usd=2)
            )

    assert (raised.value.status, raised.value.code, raised.value.field) == (
        409,
        "request_id_conflict",
        "request_id",
    )


def test_it_raises_413_for_a_batch_over_a_thousand_events(ladder: Ladder) -> None:
    events = [
        UsageEvent(request_id=f"many-{n}", connection_id=CHEAP, model=CHEAP_MODEL[1]) for n in range(1001)
    ]
    with ladder.client() as client, pytest.raises(LadderError) as raised:
        client.report_usage(events)

    assert (raised.value.status, raised.value.code, raised.value.field) == (413, "too_many_events", "events")


def test_it_raises_422_naming_an_unknown_connection_in_a_batch(ladder: Ladder) -> None:
    events = [
        UsageEvent(request_id="ok", connection_id=CHEAP, model=CHEAP_MODEL[1]),
        UsageEvent(request_id="ghost", connection_id="ghost", model=CHEAP_MODEL[1]),
    ]
    with ladder.client() as client, pytest.raises(LadderError) as raised:
        client.report_usage(events)

    assert raised.value.status == 422
    assert raised.value.field == "events[1].connection_id"
    with ladder.client() as client:  # all or nothing: the valid event was not counted either
        assert client.connections().budgets["cheap"].spent_usd == 0


def test_it_refuses_a_naive_time_before_sending(ladder: Ladder) -> None:
    naive = datetime(2026, 9, 1, 12, 0)  # noqa: DTZ001 - the mistake under test
    event = UsageEvent(request_id="naive", connection_id=CHEAP, model=CHEAP_MODEL[1], occurred_at=naive)
    transport = CountingTransport()
    with ladder.client(transport=transport) as client, pytest.raises(ValueError, match="needs a zone"):
        client.report_usage(event)
    assert transport.sent == []


# --- failures and observations ----------------------------------------------------------------


def test_it_reports_a_quota_exhaustion_and_reads_the_cooldown(ladder: Ladder) -> None:
    reset_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=30)
    headers = claude_headers(utilization=1.0, reset_at=reset_at, status="rejected")
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "5-hour limit reached"}}

    with ladder.client() as client:
        outcome = client.report_failure(PLAN, 429, headers=headers, body=body, model=PLAN_MODEL[1])
        state = client.connection(PLAN)

    assert (outcome.classification, outcome.window, outcome.reset_at) == ("quota_exhausted", "5h", reset_at)
    assert outcome.windows == ("5h",)
    assert outcome.cooldown_until == reset_at  # 60 s of backoff, clamped to the reset 30 s away
    assert state.cooldown_until == outcome.cooldown_until
    assert state.reading is not None
    window = state.reading.window("5h")
    assert window is not None
    assert (window.latched, window.remaining_pct) == (True, 0)


def test_it_sends_a_text_body_and_cuts_a_huge_one(ladder: Ladder) -> None:
    with ladder.client() as client:
        outcome = client.report_failure(CHEAP, 500, body=b"<html>" + b"x" * (2 << 20) + b"</html>")

    assert outcome.classification == "upstream_error"
    assert outcome.cooldown_until is None


def test_it_raises_404_for_an_unknown_connection(ladder: Ladder) -> None:
    with ladder.client() as client:
        for call in (
            lambda: client.report_failure("ghost", 429),
            lambda: client.report_observation("ghost", {"x-ratelimit-remaining-requests": "1"}),
            lambda: client.connection("ghost"),
        ):
            with pytest.raises(LadderError) as raised:
                call()
            assert (raised.value.status, raised.value.code) == (404, "connection_not_found")


def test_it_reports_an_observation_and_gets_the_reading(ladder: Ladder) -> None:
    reset_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=3)
    with ladder.client() as client:
        reading = client.report_observation(PLAN, claude_headers(utilization=0.25, reset_at=reset_at))
        nothing = client.report_observation(PLAN, {"content-type": "application/json"})

    assert isinstance(reading, Reading)
    assert (reading.source, reading.verifiable) == ("headers", True)
    window = reading.window("5h")
    assert window is not None
    assert (window.remaining_pct, window.reset_at, window.latched) == (75.0, reset_at, False)
    assert nothing is None


def test_it_raises_422_for_an_observation_from_the_future(ladder: Ladder) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    with ladder.client() as client, pytest.raises(LadderError) as raised:
        client.report_observation(PLAN, {}, observed_at=later)

    assert (raised.value.status, raised.value.code, raised.value.field) == (
        422,
        "future_observation",
        "observed_at",
    )


# --- connections and models -------------------------------------------------------------------


def test_it_lists_connections_and_models(ladder: Ladder) -> None:
    with ladder.client() as client:
        report = client.connections()
        plan = client.connection(PLAN)
        models = client.models()

    assert [c.id for c in report.connections] == [PLAN, CHEAP]
    assert report.get(PLAN) == plan
    assert (plan.billing, plan.overage, plan.enabled, plan.reading) == (
        "subscription",
        "hard-stop",
        True,
        None,
    )
    assert plan.rungs == {PLAN_MODEL[1]: "subscription"}
    cheap = report.get(CHEAP)
    assert cheap is not None
    assert cheap.rungs == {CHEAP_MODEL[1]: "cheap"}
    assert set(report.budgets) == {"cheap", "premium"}
    assert models[:2] == ("auto/subscription", "auto/thrifty")
    assert "auto/chat:thrifty" in models
    assert "auto/vision:thrifty" not in models  # no model of the catalog carries it


# --- standing alone ---------------------------------------------------------------------------


def test_it_imports_of_the_ladder_only_its_wire_shapes_and_neither_django_nor_litellm() -> None:
    # STYLE.md: ladder_client may import ladder.contract and the pure ladder.domain, nothing else.
    code = (
        "import sys, ladder_client; "
        "allowed = ('ladder', 'ladder.contract', 'ladder.domain'); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'ladder', 'litellm') "
        "and m not in allowed and not m.startswith(('ladder.contract.', 'ladder.domain.'))); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- credentials ------------------------------------------------------------------------------


def test_it_borrows_a_ladder_owned_token_and_pushes_a_gateway_owned_one(
    ladder: Ladder, upstream: FakeUpstream, control: FakeUpstreamControl
) -> None:
    m.Connection.objects.filter(pk=PLAN).update(base_url=upstream.url_for("claude-oauth", PLAN))
    minted = control.mint_login("claude-oauth", lifetime_s=3600)
    credential_import(connection_id=PLAN, text=json.dumps(minted["file"]), owner="ladder")
    m.Connection.objects.create(id="pushed", provider="claude", auth_type="oauth", credential_owner="gateway")
    token = gateway_token_create(name="borrower", scope_resolve=False, scope_credentials=True)[1]
    expires_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)

    with LadderClient(ladder.url, token) as client:
        borrowed = client.credential(PLAN)
        stored = client.push_credential(
            "pushed", "gw-access-token-0123456789", expires_at, account_id="acct-1"
        )
        with pytest.raises(LadderError) as refused:
            client.credential("pushed")  # the gateway owns it: the ladder lends nothing

    assert borrowed.access_token == minted["access_token"]
    assert borrowed.expires_at is not None
    assert borrowed.expires_at > datetime.now(UTC)
    assert (stored.owner, stored.expires_at, stored.account_id) == ("gateway", expires_at, "acct-1")
    assert (refused.value.status, refused.value.code) == (409, "credential_not_owned")
    assert control.token_record()["summary"]["redemptions"] == 0  # lent as it was, never refreshed
