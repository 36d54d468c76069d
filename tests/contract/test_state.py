"""The offline state file of STATE.md: strict decoding, defaults, and the export round trip."""

from __future__ import annotations

import copy
import gc
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder.contract.state.decode import decode_state, load_json_text, parse_state
from ladder.contract.state.encode import state_to_dict
from ladder.contract.state.errors import StateError
from ladder.domain import (
    Candidate,
    CatalogEntry,
    Connection,
    LadderConfig,
    ModelEntry,
    Reading,
    Snapshot,
    Window,
    resolution_to_dict,
    resolve,
)

NOW = datetime(2026, 8, 22, 12, 0, tzinfo=UTC)


def valid() -> dict[str, Any]:
    return {
        "now": "2026-08-22T12:00:00Z",
        "config": {"rung_budget_usd": {"cheap": 5.0, "premium": 0}, "budget_period": "month"},
        "billing_catalog": [
            {"provider": "claude", "auth_type": "oauth", "billing": "subscription", "overage": "hard-stop"},
            {
                "provider": "overflowing",
                "auth_type": None,
                "billing": "subscription",
                "overage": "meters-to-paid",
                "source_url": "https://example.com/terms",
                "notes": "extra usage",
                "reviewed_at": "2026-08-01T00:00:00Z",
            },
        ],
        "models": [
            {
                "provider": "claude",
                "model": "claude-sonnet-4-5",
                "input_usd_per_mtok": 3.0,
                "output_usd_per_mtok": 15.0,
                "free": False,
                "categories": ["coding", "reasoning"],
            }
        ],
        "connections": [
            {"id": "c0", "provider": "claude"},
            {"id": "c1", "provider": "claude", "auth_type": "oauth"},
            {"id": "c2", "provider": "claude", "auth_type": "oauth", "keyless": False, "enabled": True},
            {
                "id": "c3",
                "provider": "claude",
                "auth_type": "oauth",
                "keyless": False,
                "enabled": True,
                "disabled_reason": None,
                "base_url": None,
                "cooldown_until": None,
                "overage_override": None,
                "models": None,
                "quota": {
                    "fetched_at": "2026-08-22T11:59:59Z",
                    "source": "poll",
                    "verifiable": True,
                    "observed_overage": None,
                    "windows": [
                        {
                            "name": "5h",
                            "remaining_pct": 63.0,
                            "reset_at": "2026-08-22T14:00:00Z",
                            "scope_models": [],
                            "latched": False,
                        }
                    ],
                },
            },
        ],
        "spend_usd": {"cheap": 1.25, "premium": 0},
        "request": {
            "model": "auto/thrifty",
            "candidates": [
                {
                    "provider": "claude",
                    "model": "claude-sonnet-4-5",
                    "connection_id": None,
                    "allowed_connection_ids": ["c1", "c2"],
                }
            ],
        },
    }


def with_change(path: list[str | int], value: Any, *, delete: bool = False) -> dict[str, Any]:
    document = valid()
    target: Any = document
    for step in path[:-1]:
        target = target[step]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


def error_of(document: Any) -> StateError:
    with pytest.raises(StateError) as info:
        parse_state(document)
    return info.value


def test_it_parses_the_documented_example() -> None:
    state = parse_state(valid())
    assert state.now == NOW
    assert state.model == "auto/thrifty"
    assert state.candidates == (Candidate("claude", "claude-sonnet-4-5", None, ("c1", "c2")),)
    assert [c.id for c in state.snapshot.connections] == ["c0", "c1", "c2", "c3"]
    assert state.snapshot.connections[3].reading == Reading(
        fetched_at=datetime(2026, 8, 22, 11, 59, 59, tzinfo=UTC),
        windows=(Window("5h", 63.0, datetime(2026, 8, 22, 14, 0, tzinfo=UTC), (), False),),
    )
    assert state.snapshot.config == LadderConfig(rung_budget_usd={"cheap": 5.0, "premium": 0.0})
    assert dict(state.snapshot.spend_usd) == {"cheap": 1.25, "premium": 0.0}


@pytest.mark.parametrize("value", [150, 100.01, -0.5, "50", True, None])
def test_it_names_the_window_field_exactly(value: Any) -> None:
    error = error_of(with_change(["connections", 3, "quota", "windows", 0, "remaining_pct"], value))
    assert str(error) == "connections[3].quota.windows[0].remaining_pct: must be between 0 and 100"
    assert error.path == "connections[3].quota.windows[0].remaining_pct"


BAD_VALUES: list[tuple[list[str | int], Any, str]] = [
    (["now"], "2026-08-22T12:00:00", "now"),
    (["now"], "2026-08-22", "now"),
    (["now"], "yesterday", "now"),
    (["now"], 1724328000, "now"),
    (["config"], [], "config"),
    (["config", "exit_cutoff_pct"], 101, "config.exit_cutoff_pct"),
    (["config", "reentry_min_remaining_pct"], -1, "config.reentry_min_remaining_pct"),
    (["config", "max_reading_age_s"], 0, "config.max_reading_age_s"),
    (["config", "refresh_interval_s"], -60, "config.refresh_interval_s"),
    (["config", "budget_period"], "week", "config.budget_period"),
    (["config", "rung_budget_usd"], {"cheap": -1}, "config.rung_budget_usd.cheap"),
    (["config", "rung_budget_usd"], {"warp": 3}, "config.rung_budget_usd.warp"),
    (["config", "rung_budget_usd"], {"free": 3}, "config.rung_budget_usd.free"),
    (["config", "free_max_input_usd_per_mtok"], -1, "config.free_max_input_usd_per_mtok"),
    (["billing_catalog"], {"provider": "x"}, "billing_catalog"),
    (["billing_catalog", 1, "billing"], "flat", "billing_catalog[1].billing"),
    (["billing_catalog", 1, "overage"], "sometimes", "billing_catalog[1].overage"),
    (["billing_catalog", 0, "provider"], "", "billing_catalog[0].provider"),
    (["billing_catalog", 0, "provider"], None, "billing_catalog[0].provider"),
    (["billing_catalog", 0, "auth_type"], 7, "billing_catalog[0].auth_type"),
    (["billing_catalog", 1, "reviewed_at"], "2026-08-01T00:00:00", "billing_catalog[1].reviewed_at"),
    (["billing_catalog", 1, "notes"], 5, "billing_catalog[1].notes"),
    (["models"], "all", "models"),
    (["models", 0, "input_usd_per_mtok"], -1.0, "models[0].input_usd_per_mtok"),
    (["models", 0, "input_usd_per_mtok"], "3", "models[0].input_usd_per_mtok"),
    (["models", 0, "output_usd_per_mtok"], True, "models[0].output_usd_per_mtok"),
    (["models", 0, "free"], "no", "models[0].free"),
    (["models", 0, "categories"], "coding", "models[0].categories"),
    (["models", 0, "categories", 1], "audio", "models[0].categories[1]"),
    (["models", 0, "model"], "", "models[0].model"),
    (["connections"], None, "connections"),
    (["connections", 1, "id"], "has space", "connections[1].id"),
    (["connections", 1, "id"], "x" * 65, "connections[1].id"),
    (["connections", 1, "id"], 7, "connections[1].id"),
    (["connections", 1, "provider"], "", "connections[1].provider"),
    (["connections", 1, "auth_type"], ["oauth"], "connections[1].auth_type"),
    (["connections", 2, "keyless"], "false", "connections[2].keyless"),
    (["connections", 2, "enabled"], 1, "connections[2].enabled"),
    (["connections", 3, "cooldown_until"], "2026-08-22T12:05:00", "connections[3].cooldown_until"),
    (["connections", 3, "overage_override"], "free", "connections[3].overage_override"),
    (["connections", 3, "poll_interval_s"], 0, "connections[3].poll_interval_s"),
    (["connections", 3, "poll_interval_s"], 86_400.5, "connections[3].poll_interval_s"),
    (["connections", 3, "poll_interval_s"], "300", "connections[3].poll_interval_s"),
    (["connections", 3, "poll_interval_s"], True, "connections[3].poll_interval_s"),
    (["connections", 3, "reserve_pct"], 100.5, "connections[3].reserve_pct"),
    (["connections", 3, "reserve_pct"], -1, "connections[3].reserve_pct"),
    (["connections", 3, "reserve_pct"], "20", "connections[3].reserve_pct"),
    (["connections", 3, "models"], "claude-sonnet-4-5", "connections[3].models"),
    (["connections", 3, "models"], [3], "connections[3].models[0]"),
    (["connections", 3, "quota"], [], "connections[3].quota"),
    (["connections", 3, "quota", "fetched_at"], "2026-08-22T11:59:59", "connections[3].quota.fetched_at"),
    (["connections", 3, "quota", "fetched_at"], None, "connections[3].quota.fetched_at"),
    (["connections", 3, "quota", "source"], "guess", "connections[3].quota.source"),
    (["connections", 3, "quota", "verifiable"], "yes", "connections[3].quota.verifiable"),
    (["connections", 3, "quota", "observed_overage"], "free", "connections[3].quota.observed_overage"),
    (["connections", 3, "quota", "windows"], {}, "connections[3].quota.windows"),
    (["connections", 3, "quota", "windows", 0, "name"], "", "connections[3].quota.windows[0].name"),
    (
        ["connections", 3, "quota", "windows", 0, "reset_at"],
        "2026-08-22T14:00:00",
        "connections[3].quota.windows[0].reset_at",
    ),
    (
        ["connections", 3, "quota", "windows", 0, "scope_models"],
        "*opus*",
        "connections[3].quota.windows[0].scope_models",
    ),
    (["connections", 3, "quota", "windows", 0, "latched"], "no", "connections[3].quota.windows[0].latched"),
    (["spend_usd"], [], "spend_usd"),
    (["spend_usd", "cheap"], -2, "spend_usd.cheap"),
    (["spend_usd", "premium"], "lots", "spend_usd.premium"),
    (["request"], "auto/thrifty", "request"),
    (["request", "model"], 5, "request.model"),
    (["request", "candidates"], "all", "request.candidates"),
    (["request", "candidates", 0], "claude", "request.candidates[0]"),
    (
        ["request", "candidates", 0, "allowed_connection_ids"],
        "c1",
        "request.candidates[0].allowed_connection_ids",
    ),
    (
        ["request", "candidates", 0, "allowed_connection_ids"],
        ["c1", 2],
        "request.candidates[0].allowed_connection_ids[1]",
    ),
    (["request", "candidates", 0, "model"], None, "request.candidates[0].model"),
]


@pytest.mark.parametrize(("path", "value", "field"), BAD_VALUES)
def test_it_names_the_field_of_every_bad_value(path: list[str | int], value: Any, field: str) -> None:
    error = error_of(with_change(path, value))
    assert error.path == field
    assert str(error).startswith(f"{field}: ")
    assert error.message
    assert "\n" not in str(error)


@pytest.mark.parametrize(("path", "value", "field"), BAD_VALUES)
def test_it_decodes_json_text_with_the_same_verdict(path: list[str | int], value: Any, field: str) -> None:
    document = with_change(path, value)

    with pytest.raises(StateError) as info:
        decode_state(json.dumps(document).encode())

    assert str(info.value) == str(error_of(document))


def test_the_values_it_decodes_are_invisible_to_the_cyclic_collector() -> None:
    # Thousands of values per state: untracked, the collector neither walks them nor needs a pause.
    state = decode_state(json.dumps(valid()))
    connection = state.snapshot.connections[3]
    assert connection.reading is not None

    values = [connection, connection.reading, *connection.reading.windows, *state.snapshot.models]
    assert not any(gc.is_tracked(value) for value in values)


def test_it_decodes_json_text_into_the_same_state() -> None:
    text = json.dumps(valid())

    assert decode_state(text) == decode_state(text.encode()) == parse_state(valid())


def test_it_refuses_a_note_in_a_reading_which_only_adapters_write() -> None:
    error = error_of(with_change(["connections", 3, "quota", "note"], "from a file"))

    assert error.path == "connections[3].quota.note"
    assert error.message.startswith("unknown key; accepted: fetched_at, windows, source")


def test_it_refuses_an_exhausts_at_in_a_window_which_only_the_forecast_writes() -> None:
    error = error_of(
        with_change(["connections", 3, "quota", "windows", 0, "exhausts_at"], "2026-08-22T13:00:00Z")
    )

    assert error.path == "connections[3].quota.windows[0].exhausts_at"
    assert error.message == "unknown key; accepted: name, remaining_pct, reset_at, scope_models, latched"


def test_it_reads_max_event_cost_usd_and_refuses_a_negative_one() -> None:
    assert (
        parse_state(with_change(["config", "max_event_cost_usd"], 2.5)).snapshot.config.max_event_cost_usd
        == 2.5
    )

    error = error_of(with_change(["config", "max_event_cost_usd"], -1))

    assert (error.path, error.message) == ("config.max_event_cost_usd", "must be a number ≥ 0")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (["billing_catalog", 0, "provider"], "billing_catalog[0].provider"),
        (["billing_catalog", 0, "billing"], "billing_catalog[0].billing"),
        (["billing_catalog", 0, "overage"], "billing_catalog[0].overage"),
        (["models", 0, "provider"], "models[0].provider"),
        (["models", 0, "model"], "models[0].model"),
        (["connections", 2, "id"], "connections[2].id"),
        (["connections", 2, "provider"], "connections[2].provider"),
        (["connections", 3, "quota", "fetched_at"], "connections[3].quota.fetched_at"),
        (["connections", 3, "quota", "windows", 0, "name"], "connections[3].quota.windows[0].name"),
        (
            ["connections", 3, "quota", "windows", 0, "remaining_pct"],
            "connections[3].quota.windows[0].remaining_pct",
        ),
        (["request", "candidates", 0, "provider"], "request.candidates[0].provider"),
        (["request", "candidates", 0, "model"], "request.candidates[0].model"),
    ],
)
def test_it_names_a_missing_required_field(path: list[str | int], field: str) -> None:
    error = error_of(with_change(path, None, delete=True))
    assert error.path == field
    assert "required" in error.message


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ([], "name"),
        (["config"], "config.enabled"),
        (["billing_catalog", 0], "billing_catalog[0].url"),
        (["models", 0], "models[0].price"),
        (["connections", 1], "connections[1].credential"),
        (["connections", 3, "quota"], "connections[3].quota.age_s"),
        (["connections", 3, "quota", "windows", 0], "connections[3].quota.windows[0].used_pct"),
        (["spend_usd"], "spend_usd.free"),
        (["request"], "request.grouping"),
        (["request", "candidates", 0], "request.candidates[0].rung"),
    ],
)
def test_it_refuses_unknown_keys_at_every_level(path: list[str | int], field: str) -> None:
    document = valid()
    target: Any = document
    for step in path:
        target = target[step]
    target[field.rsplit(".", 1)[-1]] = 1
    error = error_of(document)
    assert error.path == field
    assert "unknown" in error.message


@pytest.mark.parametrize("value", [None, [], "state", 3])
def test_it_refuses_a_document_that_is_not_an_object(value: Any) -> None:
    error = error_of(value)
    assert "object" in error.message


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("oauth", "oauth"),
        ("oauth", "OAuth"),
        ("oauth", " OAUTH "),
        (None, ""),
        (None, "   "),
        ("", None),
    ],
)
def test_it_refuses_catalog_rows_equal_after_normalisation(first: str | None, second: str | None) -> None:
    document = valid()
    document["billing_catalog"] = [
        {"provider": "claude", "auth_type": first, "billing": "subscription", "overage": "hard-stop"},
        {"provider": "claude", "auth_type": second, "billing": "metered", "overage": "meters-to-paid"},
    ]
    error = error_of(document)
    assert error.path == "billing_catalog[1]"
    assert "duplicate" in error.message


def test_it_refuses_duplicate_models_and_connection_ids() -> None:
    document = valid()
    document["models"].append(dict(document["models"][0]))
    assert error_of(document).path == "models[1]"
    document = valid()
    document["connections"][2]["id"] = "c1"
    assert error_of(document).path == "connections[2]"


def test_it_normalises_auth_types() -> None:
    document = valid()
    document["billing_catalog"][0]["auth_type"] = " OAuth "
    document["billing_catalog"][1]["auth_type"] = ""
    document["connections"][1]["auth_type"] = "APIKEY "
    document["connections"][2]["auth_type"] = "  "
    state = parse_state(document)
    assert [e.auth_type for e in state.snapshot.billing_catalog] == ["oauth", None]
    assert [c.auth_type for c in state.snapshot.connections[:3]] == [None, "apikey", None]


def test_it_applies_the_defaults() -> None:
    state = parse_state(
        {
            "now": "2026-08-22T12:00:00Z",
            "billing_catalog": [{"provider": "p", "billing": "metered", "overage": "unknown"}],
            "models": [{"provider": "p", "model": "m"}],
            "connections": [
                {
                    "id": "c",
                    "provider": "p",
                    "quota": {
                        "fetched_at": "2026-08-22T12:00:00Z",
                        "windows": [{"name": "5h", "remaining_pct": 9}],
                    },
                }
            ],
            "request": {"candidates": [{"provider": "p", "model": "m"}]},
        }
    )
    snapshot = state.snapshot
    assert snapshot.config == LadderConfig()
    assert snapshot.billing_catalog == (CatalogEntry("p", None, "metered", "unknown", None, "", None),)
    assert snapshot.models == (ModelEntry("p", "m", None, None, False, ()),)
    assert snapshot.connections == (
        Connection(
            "c",
            "p",
            auth_type=None,
            keyless=False,
            enabled=True,
            disabled_reason=None,
            base_url=None,
            cooldown_until=None,
            overage_override=None,
            models=None,
            reading=Reading(NOW, (Window("5h", 9.0, None, (), False),), "poll", True, None),
        ),
    )
    assert dict(snapshot.spend_usd) == {}
    assert state.model is None
    assert state.candidates == (Candidate("p", "m", None, ()),)


def test_it_defaults_everything_but_now_and_the_request() -> None:
    state = parse_state({})
    assert (state.now, state.model, state.candidates) == (None, None, None)
    assert state.snapshot == Snapshot()
    assert parse_state({"request": {"model": "auto/thrifty", "candidates": None}}).candidates is None


def test_it_reads_offsets_as_the_same_instant() -> None:
    document = valid()
    document["now"] = "2026-08-22T14:00:00+02:00"
    document["connections"][3]["quota"]["windows"][0]["reset_at"] = "2026-08-22T09:00:00-05:00"
    state = parse_state(document)
    assert state.now == NOW
    assert state.now is not None
    assert state.now.utcoffset() == timedelta(0)  # kept in UTC: PostgreSQL refuses offsets beyond ±15:59
    reading = state.snapshot.connections[3].reading
    assert reading is not None
    assert reading.windows[0].reset_at == datetime(2026, 8, 22, 14, 0, tzinfo=UTC)


def test_it_refuses_an_observed_overage_outside_the_documented_values() -> None:
    """STATE.md: `"observed_overage": null` — `[null] or "meters-to-paid" / "hard-stop"`."""
    error = error_of(with_change(["connections", 3, "quota", "observed_overage"], "unknown"))
    assert error.path == "connections[3].quota.observed_overage"


def test_it_reports_bad_json_without_a_traceback() -> None:
    with pytest.raises(StateError) as info:
        load_json_text("{not json")
    assert "JSON" in str(info.value)
    assert load_json_text('{"now": null}') == {"now": None}


# --- export round trip -------------------------------------------------------------------------------------


def rich_snapshot() -> Snapshot:
    plus_two = timezone(timedelta(hours=2))
    return Snapshot(
        config=LadderConfig(3.0, 4.0, 120.0, {"cheap": 5.0, "premium": 0.0}, "day", 0.1, 2.0, 30.0),
        billing_catalog=(
            CatalogEntry(
                "claude",
                "oauth",
                "subscription",
                "hard-stop",
                "https://x",
                "n",
                datetime(2026, 8, 1, tzinfo=UTC),
            ),
            CatalogEntry("overflowing", None, "subscription", "meters-to-paid"),
        ),
        models=(
            ModelEntry("claude", "claude-sonnet-4-5", 3.0, 15.0, False, ("coding", "reasoning")),
            ModelEntry("free-co", "f", None, None, True, ()),
        ),
        connections=(
            Connection(
                "a",
                "claude",
                "oauth",
                reading=Reading(
                    datetime(2026, 8, 22, 13, 59, 0, 250000, tzinfo=plus_two),
                    (
                        Window("5h", 63.5, datetime(2026, 8, 22, 14, 0, tzinfo=UTC), (), False),
                        Window("7d-opus", 0.0, None, ("*opus*",), True),
                    ),
                    "headers",
                    False,
                    "meters-to-paid",
                ),
            ),
            Connection(
                "b.key:1",
                "overflowing",
                None,
                keyless=True,
                enabled=False,
                disabled_reason="auth_failed",
                base_url="http://127.0.0.1:9000",
                cooldown_until=datetime(2026, 8, 22, 12, 5, tzinfo=UTC),
                overage_override="hard-stop",
                models=("m1", "m2"),
            ),
        ),
        spend_usd={"cheap": 1.25, "premium": 0.0},
    )


def test_it_round_trips_an_exported_state() -> None:
    snapshot = rich_snapshot()
    document = state_to_dict(snapshot, NOW)
    text = json.dumps(document)
    state = parse_state(json.loads(text))
    assert state.snapshot == snapshot
    assert state.now == NOW
    assert state_to_dict(state.snapshot, NOW) == document


def test_it_exports_every_key_explicitly() -> None:
    document = state_to_dict(rich_snapshot(), NOW)
    assert list(document) == [
        "now",
        "config",
        "billing_catalog",
        "models",
        "connections",
        "spend_usd",
        "request",
    ]
    assert set(document["config"]) == {
        "exit_cutoff_pct",
        "reentry_min_remaining_pct",
        "max_reading_age_s",
        "rung_budget_usd",
        "budget_period",
        "free_max_input_usd_per_mtok",
        "cheap_max_input_usd_per_mtok",
        "refresh_interval_s",
        "max_event_cost_usd",
    }
    assert set(document["billing_catalog"][1]) == {
        "provider",
        "auth_type",
        "billing",
        "overage",
        "source_url",
        "notes",
        "reviewed_at",
    }
    assert set(document["models"][1]) == {
        "provider",
        "model",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "free",
        "categories",
    }
    assert set(document["connections"][1]) == {
        "id",
        "provider",
        "auth_type",
        "keyless",
        "enabled",
        "disabled_reason",
        "base_url",
        "cooldown_until",
        "overage_override",
        "poll_interval_s",
        "reserve_pct",
        "models",
        "quota",
    }
    assert set(document["connections"][0]["quota"]) == {
        "fetched_at",
        "source",
        "verifiable",
        "observed_overage",
        "windows",
    }
    assert set(document["connections"][0]["quota"]["windows"][0]) == {
        "name",
        "remaining_pct",
        "reset_at",
        "scope_models",
        "latched",
    }
    assert document["spend_usd"] == {"cheap": 1.25, "premium": 0.0}
    assert document["request"] == {"model": "auto/thrifty", "candidates": None}
    assert document["now"] == "2026-08-22T12:00:00Z"
    assert document["connections"][0]["quota"]["fetched_at"] == "2026-08-22T11:59:00.250000Z"
    assert "credential" not in json.dumps(document)


def test_it_exports_defaults_that_parse_back_to_the_same_resolution() -> None:
    state = parse_state(valid())
    exported = state_to_dict(state.snapshot, NOW)
    again = parse_state(copy.deepcopy(exported))
    first = resolution_to_dict(resolve(state.snapshot, "auto/thrifty", None, NOW))
    second = resolution_to_dict(resolve(again.snapshot, "auto/thrifty", None, NOW))
    assert first == second


# --- JSON text (one decode) and JSON values (convert) must judge alike --------------------------------------

ANY_TIME = st.sampled_from(
    ["2026-08-22T11:59:00Z"] * 8
    + ["2026-08-22T13:59:00.5+02:00"] * 4
    + ["2026-08-22T11:59:00", "soon", "", 5, "9999-12-31T23:59:59-10:00"]
)
JUNK: st.SearchStrategy[Any] = st.sampled_from(
    [None, "", "  ", "x", 0, 1.5, True, [], {}, ["a"], [""], float("nan"), float("inf")]
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, sometimes junk."""
    return st.sampled_from([True] * 9 + [False]).flatmap(lambda good: strategy if good else JUNK)


window_docs = st.fixed_dictionaries(
    {
        "name": _maybe(st.sampled_from(["5h", "7d"])),
        "remaining_pct": _maybe(st.sampled_from([0, 2, 50.5, 100, 3, 7.25, 100.5, -1])),
    },
    optional={
        "reset_at": ANY_TIME,
        "scope_models": _maybe(st.sampled_from([[], ["*opus*"], ["a", "b"]])),
        "latched": _maybe(st.booleans()),
    },
)
quota_docs = st.fixed_dictionaries(
    {"fetched_at": ANY_TIME},
    optional={
        "source": _maybe(st.sampled_from(["poll", "headers", "error", "guess"])),
        "verifiable": _maybe(st.booleans()),
        "observed_overage": _maybe(st.sampled_from(["meters-to-paid", "hard-stop", "unknown", "free"])),
        "windows": _maybe(st.lists(_maybe(window_docs), max_size=3)),
    },
)
connection_docs = st.fixed_dictionaries(
    {
        "id": _maybe(st.sampled_from(["c1", "b.key:1", "c-2", "has space", "x" * 65])),
        "provider": _maybe(st.sampled_from(["claude", "p"])),
    },
    optional={
        "auth_type": _maybe(st.sampled_from(["oauth", " OAuth ", "APIKEY"])),
        "keyless": _maybe(st.booleans()),
        "enabled": _maybe(st.booleans()),
        "disabled_reason": _maybe(st.sampled_from(["auth_failed"])),
        "base_url": _maybe(st.sampled_from(["http://127.0.0.1:9"])),
        "cooldown_until": ANY_TIME,
        "overage_override": _maybe(st.sampled_from(["hard-stop", "meters-to-paid", "unknown", "free"])),
        "poll_interval_s": _maybe(st.sampled_from([300, 0.5, 86_400, 0, -5, 86_401, 1e400])),
        "reserve_pct": _maybe(st.sampled_from([20, 0, 100, 33.5, 100.5, -1])),
        "models": _maybe(st.sampled_from([["m1"], [], ["m1", "m2"]])),
        "quota": _maybe(quota_docs),
    },
)


def _outcome(parse: Any) -> Any:
    try:
        return ("ok", parse())
    except StateError as exc:
        return ("error", str(exc))


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(connection_docs | quota_docs.map(lambda q: {"provider": "p", "quota": q}), max_size=3))
def test_it_judges_json_text_as_it_judges_json_values(documents: list[dict[str, Any]]) -> None:
    documents = [{**document, "id": f"c{index}"} for index, document in enumerate(documents)]
    state = {"connections": documents}

    decoded = _outcome(lambda: decode_state(json.dumps(state)))

    assert decoded == _outcome(lambda: parse_state(state))
