"""The routing law's invariants through the whole stack: random states (tests/domain/test_properties.py's
strategies) are imported into the database with the import service, then resolved by the gateway API and
by the dashboard's pool preview, with the clock fixed at the states' own `now`.

For every generated state and request:
- the API's body is the domain's answer for the same state (the database round trip loses nothing);
- the API's pool holds the invariants of test_properties.py, which state the rules independently of the
  code under test (L9: `auto/subscription` only keeps fresh, verified, hard-stop plans above their
  threshold; L11 allowlists are ordered subsets of the incoming list; L10 no entry mixes rungs, entries
  sorted by rung; L7/L8 nothing off, cooling or on a spent rung);
- the dashboard's pool preview shows the same data: the view's context (catalog-built candidates, as the
  page offers) or the preview builder (gateway-sent candidates), and the data attributes of the page.

HYPOTHESIS_PROFILE=nightly (make soak) runs 10,000 examples; the default run 60.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import msgspec
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ladder.contract.state.decode import parse_state
from ladder.contract.state.encode import state_to_dict
from ladder.dashboard.pages.pool_preview import Preview, preview_build
from ladder.domain import Candidate, Resolution, resolution_to_dict, resolve
from ladder.domain.billing import normalise_auth_type
from ladder.domain.timefmt import format_utc, format_utc_or_none
from ladder.domain.types import Connection, Empty, Exclusion, PoolEntry, Reading, Rung
from ladder.domain.windows import FUTURE_TOLERANCE_S
from ladder.gateway.snapshot_cache import snapshot_cache
from ladder.services.imports import state_import
from ladder.services.tokens import gateway_token_create
from tests.conftest import examples
from tests.domain.builders import NOW
from tests.domain.test_properties import (
    PROPERTIES,
    Case,
    cases,
    holds_renders_json_and_is_deterministic,
    plan_cases,
)
from tests.gateway.conftest import RefreshRecorder

pytestmark = pytest.mark.django_db

RESOLVE = "/api/v1/pools/resolve"
POOL_PAGE = reverse("ladder:pool_preview")
# Every invariant of the domain properties that reads a resolution (the last one re-resolves in process).
API_PROPERTIES = tuple(check for check in PROPERTIES if check is not holds_renders_json_and_is_deterministic)


# --- states the database can hold --------------------------------------------------------------------------


def _storable_reading(reading: Reading | None) -> Reading | None:
    """The import refuses what a gateway could never report: a reading more than 300 s in the future, two
    windows of one name. Clamp the one, number the other; the law reads neither."""
    if reading is None:
        return None
    seen: dict[str, int] = {}
    windows = []
    for window in reading.windows:
        seen[window.name] = seen.get(window.name, 0) + 1
        name = window.name if seen[window.name] == 1 else f"{window.name}.{seen[window.name]}"
        windows.append(msgspec.structs.replace(window, name=name))
    latest = NOW + timedelta(seconds=FUTURE_TOLERANCE_S)
    return msgspec.structs.replace(
        reading, windows=tuple(windows), fetched_at=min(reading.fetched_at, latest)
    )


def _storable_connection(connection: Connection, refresh_interval_s: float) -> Connection:
    """Also: the import refuses a poll interval the database cannot hold (one not slower than
    refresh_interval_s is none)."""
    poll_interval_s = connection.poll_interval_s
    return msgspec.structs.replace(
        connection,
        auth_type=normalise_auth_type(connection.auth_type),
        reading=_storable_reading(connection.reading),
        poll_interval_s=None
        if poll_interval_s is not None and poll_interval_s <= refresh_interval_s
        else poll_interval_s,
    )


@st.composite
def stored_cases(draw: st.DrawFn) -> Case:
    case = draw(cases() | plan_cases())
    if draw(st.booleans()):
        case = replace(case, candidates=None)  # the page builds its candidates from the catalog
    snapshot = case.snapshot
    refresh_interval_s = snapshot.config.refresh_interval_s
    connections = tuple(_storable_connection(c, refresh_interval_s) for c in snapshot.connections)
    return replace(case, snapshot=replace(snapshot, connections=connections))


# --- the three readers -------------------------------------------------------------------------------------


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def resolution_from_body(body: dict[str, Any]) -> Resolution:
    """The API's JSON back into the domain's value, so that the invariants read what the gateway reads."""
    empty = body["empty"]
    assert all(e["rung"] == Rung(e["rung_index"]).label for e in body["pool"])
    return Resolution(
        model=body["model"],
        grouping=body["grouping"],
        category=body["category"],
        resolved_at=datetime.fromisoformat(body["resolved_at"]),
        pool=tuple(
            PoolEntry(
                e["provider"],
                e["model"],
                Rung(e["rung_index"]),
                e["connection_id"],
                tuple(e["allowed_connection_ids"]),
            )
            for e in body["pool"]
        ),
        excluded=tuple(
            Exclusion(
                x["provider"],
                x["model"],
                x["connection_id"],
                None if x["rung"] is None else Rung[x["rung"].upper()],
                x["reason"],
                x["detail"],
            )
            for x in body["excluded"]
        ),
        empty=None if empty is None else Empty(empty["code"], empty["message"], _time(empty["retry_at"])),
        refresh=tuple(body["refresh"]),
    )


def shown_by_api(body: dict[str, Any]) -> dict[str, Any]:
    """What the pool preview displays, taken from the API's body."""
    empty = body["empty"]
    return {
        "resolved_at": body["resolved_at"],
        "pool": [
            [e["provider"], e["model"], e["rung"], e["rung_index"], e["allowed_connection_ids"]]
            for e in body["pool"]
        ],
        "excluded": [
            [x["provider"], x["model"], x["connection_id"], x["rung"], x["reason"], x["detail"]]
            for x in body["excluded"]
        ],
        "empty": empty,
        "refresh": body["refresh"],
    }


def shown_by_preview(preview: Preview) -> dict[str, Any]:
    assert not preview.error, preview.error
    assert [entry.position for entry in preview.pool] == list(range(1, len(preview.pool) + 1))
    return {
        "resolved_at": format_utc(preview.now),
        "pool": [[e.provider, e.model, e.rung, e.rung_index, list(e.connection_ids)] for e in preview.pool],
        "excluded": [
            [x.provider, x.model, x.connection_id, None if x.rung == "—" else x.rung, x.reason, x.detail]
            for x in preview.excluded
        ],
        "empty": (
            {
                "code": preview.empty_code,
                "message": preview.empty_message,
                "retry_at": format_utc_or_none(preview.retry_at),
            }
            if preview.is_empty
            else None
        ),
        "refresh": list(preview.refresh),
    }


class PoolPage(HTMLParser):
    """The data attributes of the preview page: each pool entry's rung and connection links, and each
    excluded pair's connection and reason."""

    def __init__(self) -> None:
        super().__init__()
        self.pool: list[tuple[int, list[str]]] = []
        self.excluded: list[tuple[str, str]] = []
        self._in_entry = False
        self._in_link = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "li" and "data-rung" in found:
            self.pool.append((int(found["data-rung"] or "-1"), []))
            self._in_entry = True
        elif tag == "li" and "data-reason" in found:
            self.excluded.append((found.get("data-connection") or "", found["data-reason"] or ""))
        elif tag == "a" and self._in_entry and found.get("class") == "conn":
            self._in_link = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self._in_entry = False
        if tag == "a":
            self._in_link = False

    def handle_data(self, data: str) -> None:
        if self._in_link:
            self.pool[-1][1].append(data)


def shown_by_page(html: str) -> PoolPage:
    page = PoolPage()
    page.feed(html)
    return page


# --- fixtures ----------------------------------------------------------------------------------------------


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """One clock for the import, the API and the dashboard: every freshness boundary is exact."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    return NOW


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> RefreshRecorder:
    recorder = RefreshRecorder()
    monkeypatch.setattr("ladder.gateway.resolve.refresh_request", recorder)
    return recorder


@pytest.fixture
def fresh_snapshot_cache() -> Iterator[None]:
    # The test database rolls back without bumping the state version: never reuse another test's snapshot.
    snapshot_cache.clear()
    yield
    snapshot_cache.clear()


@pytest.fixture
def gateway(frozen_now: datetime, refreshes: RefreshRecorder, fresh_snapshot_cache: None) -> Client:
    token = gateway_token_create(name="fuzz", scope_resolve=True, scope_report=False)[1]
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def viewer(frozen_now: datetime) -> Client:
    client = Client()
    client.force_login(User.objects.create_user("viewer", "viewer@example.test", "not-used-here"))
    return client


def candidates_json(candidates: list[Candidate] | None) -> list[dict[str, Any]] | None:
    if candidates is None:
        return None
    return [
        {
            "provider": c.provider,
            "model": c.model,
            "connection_id": c.connection_id,
            "allowed_connection_ids": list(c.allowed_connection_ids),
        }
        for c in candidates
    ]


# --- the property ------------------------------------------------------------------------------------------


@settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=stored_cases())
def test_it_answers_alike_in_the_api_the_dashboard_and_the_domain(
    case: Case, gateway: Client, viewer: Client, frozen_now: datetime
) -> None:
    state_import(data=state_to_dict(case.snapshot, frozen_now), replace=True)
    request = {"model": case.model, "candidates": candidates_json(case.candidates)}

    response = gateway.post(RESOLVE, json.dumps(request), content_type="application/json")

    assert response.status_code == 200, response.content[:500]
    body = response.json()
    expected = resolution_to_dict(resolve(case.snapshot_copy(), case.model, case.candidates, frozen_now))
    assert body == expected

    # --hypothesis-show-statistics shows how often each kind of answer was reached
    event(f"{body['grouping']}: {'an empty pool' if body['empty'] else 'a pool'}")
    resolution = resolution_from_body(body)
    for check in API_PROPERTIES:
        check(case, resolution)

    if case.candidates is None:
        page = viewer.get(POOL_PAGE, {"model": case.model})
        assert page.status_code == 200
        assert shown_by_preview(page.context["preview"]) == shown_by_api(body)
        html = shown_by_page(page.content.decode())
        assert html.pool == [(e["rung_index"], e["allowed_connection_ids"]) for e in body["pool"]]
        assert html.excluded == [(x["connection_id"], x["reason"]) for x in body["excluded"]]
    else:
        preview = preview_build(auto_id=case.model, now=frozen_now, candidates=case.candidates)
        assert shown_by_preview(preview) == shown_by_api(body)


# Found by this fuzzing: `models: []` (serves no model) used to be stored as null (every catalog model).
def test_it_keeps_an_empty_models_list_through_the_database(gateway: Client, frozen_now: datetime) -> None:
    state = {
        "now": format_utc(frozen_now),
        "billing_catalog": [{"provider": "p0", "billing": "metered", "overage": "unknown"}],
        "models": [{"provider": "p0", "model": "m0", "input_usd_per_mtok": 0.5}],
        "connections": [{"id": "c0", "provider": "p0", "models": []}],
    }
    state_import(data=state, replace=True)

    response = gateway.post(RESOLVE, json.dumps({"model": "auto/thrifty"}), content_type="application/json")

    offline = resolution_to_dict(resolve(parse_state(state).snapshot, "auto/thrifty", None, frozen_now))
    assert offline["empty"]["code"] == "no_candidates"
    assert response.json() == offline
