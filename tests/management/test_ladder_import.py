from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from ladder import models as m
from ladder.contract.state.decode import parse_state
from ladder.security.crypto import decrypt_credential, encrypt_credential
from ladder.services import imports
from tests.conftest import SHARED

VECTORS = sorted((SHARED / "acceptance" / "vectors").glob("*.json"))


def write_state(tmp_path: Path, state: dict[str, Any]) -> str:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    return str(path)


def export(now: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("ladder_resolve", export=True, now=now, stdout=out)
    return json.loads(out.getvalue())


def valid_vector_states() -> list[Path]:
    return [p for p in VECTORS if "exit" not in json.loads(p.read_text())["expect"]]


@pytest.mark.django_db
@pytest.mark.parametrize("vector", valid_vector_states(), ids=lambda p: p.stem)
def test_it_round_trips_every_vector_state_through_the_database(tmp_path: Path, vector: Path) -> None:
    state = json.loads(vector.read_text())["state"]
    call_command("ladder_import", write_state(tmp_path, state), replace=True, stdout=io.StringIO())

    exported = parse_state(export(state["now"])).snapshot
    original = parse_state(state).snapshot
    assert exported.connections == original.connections
    assert exported.models == original.models
    assert sorted(map(repr, exported.billing_catalog)) == sorted(map(repr, original.billing_catalog))
    assert exported.config == original.config
    for rung in ("cheap", "premium"):
        assert exported.spend_usd.get(rung, 0.0) == original.spend_usd.get(rung, 0.0)


@pytest.mark.django_db
def test_it_writes_nothing_when_one_row_is_bad(tmp_path: Path) -> None:
    state = {
        "now": "2026-08-22T12:00:00Z",
        "billing_catalog": [
            {"provider": "fresh-co", "auth_type": None, "billing": "metered", "overage": "unknown"}
        ],
        "connections": [
            {"id": "good", "provider": "fresh-co"},
            {
                "id": "bad",
                "provider": "fresh-co",
                "quota": {
                    "fetched_at": "2026-08-22T11:00:00Z",
                    "windows": [{"name": "5h", "remaining_pct": 101}],
                },
            },
        ],
    }
    with pytest.raises(CommandError) as caught:
        call_command("ladder_import", write_state(tmp_path, state))
    assert "connections[1].quota.windows[0].remaining_pct" in str(caught.value)
    assert caught.value.returncode == 2
    assert not m.Connection.objects.filter(pk="good").exists()
    assert not m.BillingCatalogEntry.objects.filter(provider="fresh-co").exists()


@pytest.mark.django_db
def test_it_refuses_a_reading_from_the_future(tmp_path: Path) -> None:
    future = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = {"connections": [{"id": "c1", "provider": "p", "quota": {"fetched_at": future, "windows": []}}]}
    with pytest.raises(CommandError, match=r"connections\[0\]\.quota\.fetched_at: is more than 300 s"):
        call_command("ladder_import", write_state(tmp_path, state))
    assert not m.Connection.objects.filter(pk="c1").exists()


@pytest.mark.django_db
def test_it_imports_spend_once_per_rung_however_often_the_file_is_loaded(tmp_path: Path) -> None:
    state = {"now": "2026-08-22T12:00:00Z", "spend_usd": {"cheap": 1.25, "premium": 3}}
    path = write_state(tmp_path, state)
    call_command("ladder_import", path, stdout=io.StringIO())
    call_command("ladder_import", path, stdout=io.StringIO())
    events = m.UsageEvent.objects.filter(request_id__startswith="import:").order_by("request_id")
    assert [(e.request_id, float(e.cost_usd), e.budget_rung) for e in events] == [
        ("import:2026-08-22T12:00:00Z:cheap", 1.25, "cheap"),
        ("import:2026-08-22T12:00:00Z:premium", 3.0, "premium"),
    ]


@pytest.mark.django_db
def test_it_keeps_rows_absent_from_the_file_unless_replace(tmp_path: Path) -> None:
    m.Connection.objects.create(id="kept", provider="p")
    path = write_state(tmp_path, {"connections": [{"id": "new", "provider": "p"}]})
    call_command("ladder_import", path, stdout=io.StringIO())
    assert set(m.Connection.objects.values_list("id", flat=True)) == {"kept", "new"}
    call_command("ladder_import", path, replace=True, stdout=io.StringIO())
    assert set(m.Connection.objects.values_list("id", flat=True)) == {"new"}


@pytest.mark.django_db
def test_it_keeps_a_credential_rotated_while_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = m.Connection(id="c1", provider="claude", auth_type="oauth", credential_owner="ladder")
    connection.set_credential("old-access-token")
    connection.save()
    clean = imports._full_clean

    def clean_then_rotate(row: Any, path: str, **kwargs: Any) -> None:
        clean(row, path, **kwargs)
        if isinstance(row, m.Connection):  # a refresher writes back after the import read the row
            m.Connection.objects.filter(pk="c1").update(
                credential_ciphertext=encrypt_credential("rotated-access-token"),
                refresh_ciphertext=encrypt_credential("rotated-refresh-blob"),
            )

    monkeypatch.setattr(imports, "_full_clean", clean_then_rotate)
    path = write_state(tmp_path, {"connections": [{"id": "c1", "provider": "claude", "auth_type": "oauth"}]})
    call_command("ladder_import", path, stdout=io.StringIO())

    row = m.Connection.objects.get(pk="c1")
    assert row.get_credential() == "rotated-access-token"
    assert decrypt_credential(row.refresh_ciphertext) == "rotated-refresh-blob"
    assert row.credential_owner == "ladder"


@pytest.mark.django_db
def test_it_never_exports_a_credential(tmp_path: Path) -> None:
    connection = m.Connection(id="secretive", provider="claude", auth_type="oauth")
    connection.set_credential("sk-very-secret-value")
    connection.save()
    out = io.StringIO()
    call_command("ladder_resolve", export=True, stdout=out)
    assert "sk-very-secret-value" not in out.getvalue()
    assert connection.credential_ciphertext not in out.getvalue()
    assert "secretive" in out.getvalue()


def test_it_refuses_an_unreadable_file() -> None:
    with pytest.raises(CommandError, match="cannot read /nonexistent/state.json") as caught:
        call_command("ladder_import", "/nonexistent/state.json")
    assert caught.value.returncode == 2


@pytest.mark.django_db
def test_it_makes_an_older_imported_reading_the_latest(tmp_path: Path) -> None:
    def state_with(remaining: float, fetched_at: str) -> dict[str, Any]:
        quota = {"fetched_at": fetched_at, "windows": [{"name": "5h", "remaining_pct": remaining}]}
        return {"connections": [{"id": "c1", "provider": "p", "quota": quota}]}

    call_command(
        "ladder_import", write_state(tmp_path, state_with(10.0, "2026-08-22T12:00:00Z")), stdout=io.StringIO()
    )
    call_command(
        "ladder_import", write_state(tmp_path, state_with(99.0, "2026-08-22T11:00:00Z")), stdout=io.StringIO()
    )
    exported = export("2026-08-22T12:00:00Z")
    assert exported["connections"][0]["quota"]["windows"][0]["remaining_pct"] == 99.0


def test_it_refuses_spend_without_now(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="now: is required when spend_usd is given"):
        call_command("ladder_import", write_state(tmp_path, {"spend_usd": {"cheap": 1.0}}))


@pytest.mark.django_db
def test_it_refuses_duplicate_and_overlong_window_names(tmp_path: Path) -> None:
    windows = [{"name": "5h", "remaining_pct": 1.0}, {"name": "5h", "remaining_pct": 2.0}]
    quota = {"fetched_at": "2026-08-22T11:00:00Z", "windows": windows}
    with pytest.raises(CommandError, match=r"windows\[1\]\.name: duplicate window name"):
        call_command(
            "ladder_import",
            write_state(tmp_path, {"connections": [{"id": "c", "provider": "p", "quota": quota}]}),
        )
    quota["windows"] = [{"name": "w" * 65, "remaining_pct": 1.0}]
    with pytest.raises(CommandError, match=r"windows\[0\]\.name: must be at most 64 characters"):
        call_command(
            "ladder_import",
            write_state(tmp_path, {"connections": [{"id": "c", "provider": "p", "quota": quota}]}),
        )
    assert not m.Connection.objects.filter(pk="c").exists()


@pytest.mark.django_db
def test_it_imports_times_with_any_valid_offset(tmp_path: Path) -> None:
    # -18:31 is valid ISO 8601 that PostgreSQL refuses (it crashed the import there); stored as UTC.
    state = {
        "now": "2026-08-22T12:00:00Z",
        "connections": [
            {
                "id": "c1",
                "provider": "p",
                "cooldown_until": "2026-08-22T00:00:00-18:31",
                "quota": {
                    "fetched_at": "2026-08-21T17:29:00-18:31",
                    "windows": [
                        {"name": "5h", "remaining_pct": 50.0, "reset_at": "2026-08-23T06:31:00+18:31"}
                    ],
                },
            }
        ],
    }
    call_command("ladder_import", write_state(tmp_path, state), stdout=io.StringIO())

    connection = export("2026-08-22T12:00:00Z")["connections"][0]
    assert connection["cooldown_until"] == "2026-08-22T18:31:00Z"
    assert connection["quota"]["fetched_at"] == "2026-08-22T12:00:00Z"
    assert connection["quota"]["windows"][0]["reset_at"] == "2026-08-22T12:00:00Z"


@pytest.mark.django_db
def test_it_round_trips_a_reserve_and_a_poll_interval(tmp_path: Path) -> None:
    state = {
        "now": "2026-08-22T12:00:00Z",
        "connections": [{"id": "c1", "provider": "p", "poll_interval_s": 300, "reserve_pct": 20}],
    }
    call_command("ladder_import", write_state(tmp_path, state), stdout=io.StringIO())

    row = m.Connection.objects.get(pk="c1")
    assert (row.min_poll_interval_s, row.reserve_pct) == (300.0, 20.0)
    exported = export("2026-08-22T12:00:00Z")["connections"][0]
    assert (exported["poll_interval_s"], exported["reserve_pct"]) == (300.0, 20.0)


@pytest.mark.django_db
def test_it_refuses_a_poll_interval_not_slower_than_the_refresh_interval(tmp_path: Path) -> None:
    state = {"connections": [{"id": "c1", "provider": "p", "poll_interval_s": 60}]}

    with pytest.raises(CommandError) as error:
        call_command("ladder_import", write_state(tmp_path, state), stdout=io.StringIO())

    assert "connections[0].poll_interval_s: must be above refresh_interval_s (60)" in str(error.value)
    assert not m.Connection.objects.exists()
