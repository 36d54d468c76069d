"""The offline resolver: `manage.py ladder_resolve STATE.json` (STATE.md)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from argparse import ArgumentParser
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ladder.contract.state.decode import parse_state
from ladder.domain import resolution_to_dict, resolve
from ladder.management.commands.ladder_resolve import Command

ROOT = Path(__file__).resolve().parents[2]


def state(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "now": "2026-08-22T12:00:00Z",
        "billing_catalog": [
            {"provider": "planned", "auth_type": "oauth", "billing": "subscription", "overage": "hard-stop"},
            {"provider": "metered-co", "auth_type": None, "billing": "metered", "overage": "meters-to-paid"},
        ],
        "models": [
            {"provider": "planned", "model": "m1", "input_usd_per_mtok": 3.0, "categories": ["coding"]},
            {
                "provider": "metered-co",
                "model": "cheap-model",
                "input_usd_per_mtok": 0.5,
                "categories": ["chat"],
            },
        ],
        "connections": [
            {
                "id": "s1",
                "provider": "planned",
                "auth_type": "oauth",
                "quota": {
                    "fetched_at": "2026-08-22T11:59:00Z",
                    "windows": [{"name": "5h", "remaining_pct": 40.0, "reset_at": "2026-08-22T14:00:00Z"}],
                },
            },
            {"id": "k1", "provider": "metered-co", "auth_type": "apikey"},
        ],
        "request": {"model": "auto/thrifty", "candidates": None},
    }
    document.update(changes)
    return document


def write(tmp_path: Path, document: Any, name: str = "state.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


def resolve_via_command(*args: str) -> tuple[dict[str, Any], str]:
    out, err = StringIO(), StringIO()
    call_command("ladder_resolve", *args, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def refusal(*args: str) -> CommandError:
    with pytest.raises(CommandError) as info:
        call_command("ladder_resolve", *args, stdout=StringIO(), stderr=StringIO())
    return info.value


def manage(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "ladder_resolve", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- through call_command ----------------------------------------------------------------------------------


def test_it_prints_the_resolution_as_json(tmp_path: Path) -> None:
    document, err = resolve_via_command(str(write(tmp_path, state())))
    parsed = parse_state(state())
    assert parsed.now is not None
    assert parsed.model is not None
    expected = resolution_to_dict(resolve(parsed.snapshot, parsed.model, parsed.candidates, parsed.now))
    assert document == expected
    assert list(document) == [
        "model",
        "grouping",
        "category",
        "resolved_at",
        "pool",
        "excluded",
        "empty",
        "refresh",
    ]
    assert [(e["model"], e["rung"]) for e in document["pool"]] == [
        ("m1", "subscription"),
        ("cheap-model", "cheap"),
    ]
    assert err == ""


def many_connections(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{index}",
            "provider": "planned",
            "auth_type": "oauth",
            "quota": {
                "fetched_at": "2026-08-22T11:59:00Z",
                "windows": [{"name": "5h", "remaining_pct": 40.0, "reset_at": "2026-08-22T14:00:00Z"}],
            },
        }
        for index in range(count)
    ]


def test_the_collector_is_back_on_after_a_refused_file(tmp_path: Path) -> None:
    connections = many_connections(100)
    connections[99]["quota"]["windows"][0]["remaining_pct"] = 101
    refusal(str(write(tmp_path, state(connections=connections))))
    assert gc.isenabled()


@pytest.mark.parametrize("flags", [[], ["--indent", "2"]])
def test_it_writes_back_a_lone_surrogate_the_file_held(tmp_path: Path, flags: list[str]) -> None:
    # json (not orjson) reads such a file; the answer is written with the escape the file held
    document = state()
    document["models"][0]["model"] = "m\ud800"
    path = write(tmp_path, json.dumps(document))  # ASCII escapes: the file itself is valid UTF-8

    run = manage(str(path), *flags)

    assert run.returncode == 0, run.stderr
    assert "\\ud800" in run.stdout
    assert json.loads(run.stdout)["pool"][0]["model"] == "m\ud800"


def test_it_answers_an_empty_pool_with_success(tmp_path: Path) -> None:
    document, _ = resolve_via_command(
        str(write(tmp_path, state(request={"model": "auto/vision:subscription"})))
    )
    assert document["pool"] == []
    assert document["empty"]["code"] == "no_candidates"


def test_it_overrides_the_model(tmp_path: Path) -> None:
    path = str(write(tmp_path, state()))
    document, _ = resolve_via_command(path, "--model", "auto/chat:thrifty")
    assert (document["model"], document["grouping"], document["category"]) == (
        "auto/chat:thrifty",
        "thrifty",
        "chat",
    )
    assert [e["model"] for e in document["pool"]] == ["cheap-model"]


def test_it_overrides_now(tmp_path: Path) -> None:
    path = str(write(tmp_path, state()))
    document, _ = resolve_via_command(
        path, "--now", "2026-08-22T14:30:00+02:00", "--model", "auto/subscription"
    )
    assert document["resolved_at"] == "2026-08-22T12:30:00Z"
    # 31 minutes after the reading: stale under auto/subscription, and asked for again
    assert document["pool"] == []
    assert [(x["connection_id"], x["reason"]) for x in document["excluded"]] == [
        ("s1", "reading_stale"),
        ("k1", "not_plan_billing"),
    ]
    assert document["refresh"] == ["s1"]


def test_it_takes_now_from_the_flag_when_the_file_has_none(tmp_path: Path) -> None:
    document = state()
    del document["now"]
    got, _ = resolve_via_command(str(write(tmp_path, document)), "--now", "2026-08-22T12:00:00Z")
    assert got["resolved_at"] == "2026-08-22T12:00:00Z"


def test_it_takes_the_model_from_the_flag_when_the_file_has_none(tmp_path: Path) -> None:
    got, _ = resolve_via_command(str(write(tmp_path, state(request={}))), "--model", "auto/subscription")
    assert got["model"] == "auto/subscription"


@pytest.mark.parametrize(
    ("document", "args", "field"),
    [
        (
            state(
                connections=[
                    {
                        "id": "c",
                        "provider": "p",
                        "quota": {
                            "fetched_at": "2026-08-22T11:59:00Z",
                            "windows": [{"name": "5h", "remaining_pct": 101}],
                        },
                    }
                ]
            ),
            (),
            "connections[0].quota.windows[0].remaining_pct",
        ),
        (state(now="2026-08-22T12:00:00"), (), "now"),
        (state(surprise=True), (), "surprise"),
        (state(request={"model": "gpt-4o"}), (), "request.model"),
        (state(request={"model": "auto/subscription:coding"}), (), "request.model"),
        (state(request={"candidates": None}), (), "request.model"),
        (state(), ("--now", "2026-08-22T12:00:00"), "--now"),
        (state(config={"rung_budget_usd": {"warp": 1}}), (), "config.rung_budget_usd.warp"),
    ],
)
def test_it_refuses_a_bad_file_with_exit_2_naming_the_field(
    tmp_path: Path, document: dict[str, Any], args: tuple[str, ...], field: str
) -> None:
    error = refusal(str(write(tmp_path, document)), *args)
    assert error.returncode == 2
    assert str(error).startswith(f"{field}: ")
    assert "\n" not in str(error)


def test_it_refuses_a_missing_now(tmp_path: Path) -> None:
    document = state()
    del document["now"]
    error = refusal(str(write(tmp_path, document)))
    assert error.returncode == 2
    assert str(error).startswith("now: ")


def test_it_names_the_flag_for_a_bad_model_flag(tmp_path: Path) -> None:
    error = refusal(str(write(tmp_path, state())), "--model", "auto/coding:warp")
    assert error.returncode == 2
    assert "auto/coding:warp" in str(error)


@pytest.mark.parametrize("text", ["{not json", "", "[]"])
def test_it_refuses_a_file_that_is_not_a_state_object(tmp_path: Path, text: str) -> None:
    error = refusal(str(write(tmp_path, text)))
    assert error.returncode == 2


def test_it_builds_its_parser_once_and_parses_each_call_afresh(tmp_path: Path) -> None:
    path = str(write(tmp_path, state()))
    first = Command().create_parser("", "ladder_resolve")
    assert Command().create_parser("", "ladder_resolve") is first
    # The flags of one call never leak into the next.
    assert resolve_via_command(path, "--model", "auto/chat:thrifty")[0]["category"] == "chat"
    document, _ = resolve_via_command(path)
    assert (document["model"], document["resolved_at"]) == ("auto/thrifty", "2026-08-22T12:00:00Z")
    with pytest.raises(TypeError, match="Unknown option"):
        call_command("ladder_resolve", path, bogus=1, stdout=StringIO())


def test_a_subclass_gets_a_parser_of_its_own() -> None:
    class WithFlag(Command):
        def add_arguments(self, parser: ArgumentParser) -> None:
            super().add_arguments(parser)
            parser.add_argument("--extra")

    base = Command().create_parser("", "ladder_resolve")
    own = WithFlag().create_parser("", "ladder_resolve")
    assert own is not base
    assert own.parse_args(["--extra", "x"]).extra == "x"
    with pytest.raises(CommandError):
        base.parse_args(["--extra", "x"])


def test_its_command_line_parser_exits_where_call_commands_raises() -> None:
    from_code = Command().create_parser("manage.py", "ladder_resolve")
    command = Command()
    command._called_from_command_line = True  # type: ignore[attr-defined]  # as run_from_argv sets it
    from_line = command.create_parser("manage.py", "ladder_resolve")
    assert from_line is not from_code
    with pytest.raises(CommandError):
        from_code.parse_args(["--indent", "x"])
    with pytest.raises(SystemExit):
        from_line.parse_args(["--indent", "x"])


def test_it_refuses_a_missing_file(tmp_path: Path) -> None:
    error = refusal(str(tmp_path / "absent.json"))
    assert error.returncode == 2
    assert "absent.json" in str(error)


def test_it_refuses_to_run_without_a_file() -> None:
    assert refusal().returncode == 2


# --- through a real process --------------------------------------------------------------------------------


def test_it_exits_0_with_only_json_on_stdout(tmp_path: Path) -> None:
    run = manage(str(write(tmp_path, state())))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["grouping"] == "thrifty"
    assert run.stderr == ""


def test_it_exits_2_with_one_line_naming_the_field(tmp_path: Path) -> None:
    document = state()
    document["connections"][0]["quota"]["windows"][0]["remaining_pct"] = 150
    run = manage(str(write(tmp_path, document)))
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "connections[0].quota.windows[0].remaining_pct: must be between 0 and 100" in lines[0]


def test_it_exits_2_for_a_bad_model_id(tmp_path: Path) -> None:
    run = manage(str(write(tmp_path, state())), "--model", "gpt-4o")
    assert run.returncode == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert "gpt-4o" in run.stderr


def test_it_keeps_the_error_on_one_line_whatever_the_model_id(tmp_path: Path) -> None:
    """STATE.md: "a one-line error on stderr naming the field"; a newline in a model id must not split it."""
    run = manage(str(write(tmp_path, state(request={"model": "auto/thrifty\nauto/x"}))))
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1


def test_it_reads_standard_input_for_a_dash() -> None:
    run = manage(
        "-", "--model", "auto/subscription", "--now", "2026-08-22T12:01:00Z", stdin=json.dumps(state())
    )
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert (document["model"], document["resolved_at"]) == ("auto/subscription", "2026-08-22T12:01:00Z")
    assert [e["allowed_connection_ids"] for e in document["pool"]] == [["s1"]]


def test_it_exits_2_for_a_missing_now_in_a_process(tmp_path: Path) -> None:
    document = state()
    del document["now"]
    run = manage(str(write(tmp_path, document)))
    assert run.returncode == 2
    assert run.stdout == ""
    assert "now" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("flag", "field"), [("--model", "model"), ("--now", "now")])
def test_it_refuses_an_empty_override_instead_of_ignoring_it(tmp_path: Path, flag: str, field: str) -> None:
    """STATE.md: `--model` and `--now` override the file; an empty override is a bad model id / time (exit 2),
    not a silent fall-back to the file's value."""
    error = refusal(str(write(tmp_path, state())), flag, "")
    assert error.returncode == 2
    assert field in str(error)


def huge_remaining() -> str:
    document = state()
    document["connections"][0]["quota"]["windows"][0]["remaining_pct"] = 10**400
    return json.dumps(document)


def remaining_written_as(literal: str) -> str:
    # JSON that the fast decoder refuses and Python's json reads (NaN, 1e400): the same field message.
    document = state()
    document["connections"][0]["quota"]["windows"][0]["remaining_pct"] = "LITERAL"
    text = json.dumps(document)
    assert text.count('"LITERAL"') == 1
    return text.replace('"LITERAL"', literal)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (huge_remaining(), "connections[0].quota.windows[0].remaining_pct: must be between 0 and 100"),
        (
            remaining_written_as("NaN"),
            "connections[0].quota.windows[0].remaining_pct: must be between 0 and 100",
        ),
        (
            remaining_written_as("1e400"),
            "connections[0].quota.windows[0].remaining_pct: must be between 0 and 100",
        ),
        ("[" * 100_000, "nested too deeply"),
        (
            json.dumps(state(now="9999-12-31T23:59:59-10:00")),
            "now: '9999-12-31T23:59:59-10:00' is out of range",
        ),
        (
            json.dumps(state(now="0001-01-01T00:00:00+14:00")),
            "now: '0001-01-01T00:00:00+14:00' is out of range",
        ),
    ],
)
def test_it_refuses_hostile_files_with_one_line_instead_of_a_traceback(
    tmp_path: Path, text: str, message: str
) -> None:
    error = refusal(str(write(tmp_path, text)))
    assert error.returncode == 2
    assert message in str(error)
    assert "\n" not in str(error)


def test_it_refuses_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"now": "2026-08-22T12:00:00Z", "notes": "caf\xe9"}')
    error = refusal(str(path))
    assert error.returncode == 2
    assert "is not UTF-8 text" in str(error)


def test_it_refuses_a_connection_id_with_a_trailing_newline(tmp_path: Path) -> None:
    document = state()
    document["connections"][1]["id"] = "k1\n"
    error = refusal(str(write(tmp_path, document)))
    assert "connections[1].id" in str(error)
