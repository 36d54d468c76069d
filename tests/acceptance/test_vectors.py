"""Acceptance vectors, shared and ours, judged by check.py's own comparison.

check.py runs `manage.py ladder_resolve` in a process per vector; here its `subprocess.run` is pointed at
`call_command` so that the same comparison runs in milliseconds. One test still runs check.py for real.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]
SHARED_CHECK = ROOT.parent / "shared" / "acceptance" / "check.py"
SHARED_VECTORS = SHARED_CHECK.parent / "vectors"
OUR_VECTORS = Path(__file__).resolve().parent / "vectors"
VECTOR_KEYS = {"name", "why", "state", "expect"}
EXPECT_KEYS = {"pool", "excluded", "empty", "refresh", "exit"}


def _load_check() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("shared_acceptance_check", SHARED_CHECK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_process_run(args: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
    """What `PYTHON manage.py ladder_resolve FILE` would print, without starting a process."""
    assert args[1:3] == ["manage.py", "ladder_resolve"], args
    out, err = StringIO(), StringIO()
    try:
        call_command("ladder_resolve", *args[3:], stdout=out, stderr=err)
    except CommandError as exc:
        return subprocess.CompletedProcess(args, exc.returncode, out.getvalue(), f"CommandError: {exc}\n")
    return subprocess.CompletedProcess(args, 0, out.getvalue(), err.getvalue())


CHECK = _load_check()
CHECK.subprocess = types.SimpleNamespace(run=_in_process_run)  # type: ignore[attr-defined]


def _vectors(folder: Path) -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in sorted(folder.glob("*.json"))]


@pytest.mark.parametrize("path", _vectors(SHARED_VECTORS) + _vectors(OUR_VECTORS))
def test_it_passes_the_vector(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    problems = CHECK.check(vector)
    assert problems == [], f"{path.name}: {vector['why']}\n" + "\n".join(problems)


@pytest.mark.parametrize("path", _vectors(OUR_VECTORS))
def test_it_keeps_our_vectors_in_the_shared_format(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    assert set(vector) == VECTOR_KEYS
    assert vector["name"] == path.stem
    assert isinstance(vector["why"], str)
    assert vector["why"]
    assert set(vector["expect"]) <= EXPECT_KEYS
    assert "pool" in vector["expect"] or "exit" in vector["expect"]


def test_it_has_between_20_and_40_extra_vectors() -> None:
    assert 20 <= len(list(OUR_VECTORS.glob("*.json"))) <= 40


def test_it_runs_check_py_for_real_on_one_vector(tmp_path: Path) -> None:
    source = OUR_VECTORS / "x02-override-meters-to-paid.json"
    (tmp_path / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(SHARED_CHECK), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"
