"""STYLE: ladder/domain is pure Python; importing it pulls in no django module (and no other ladder part)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTHONSTARTUP"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=60
    )


def test_it_imports_the_domain_without_django() -> None:
    run = _run(
        "import ladder.domain, sys; "
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')); "
        "assert not bad, bad"
    )
    assert run.returncode == 0, run.stderr


def test_it_imports_no_other_part_of_ladder_from_the_domain() -> None:
    run = _run(
        "import ladder.domain, sys; "
        "bad = sorted(m for m in sys.modules "
        "if m.startswith('ladder.') and not m.startswith('ladder.domain')); "
        "assert not bad, bad"
    )
    assert run.returncode == 0, run.stderr


def test_it_imports_the_state_file_parser_without_django() -> None:
    run = _run(
        "import ladder.contract.state.decode, ladder.contract.state.encode, sys; "
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')); "
        "assert not bad, bad"
    )
    assert run.returncode == 0, run.stderr
