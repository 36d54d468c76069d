"""The two clients share no block of code: what both do is written once, in ``ladder_client.calls``
(the calls) and ``ladder_client.core`` (the rules), and each client only sends. Checked with pylint's
symilar, six lines, comments, docstrings and imports aside."""

from __future__ import annotations

from pathlib import Path

import pytest
from pylint.checkers.symilar import Run as symilar

import ladder_client

CLIENTS = [str(Path(ladder_client.__file__).parent / name) for name in ("client.py", "aclient.py")]


def test_the_two_clients_share_no_block_of_six_lines(capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--duplicates=6", "--ignore-comments", "--ignore-docstrings", "--ignore-imports"]
    with pytest.raises(SystemExit) as exited:
        symilar([*options, *CLIENTS])
    report = capsys.readouterr().out
    assert exited.value.code == 0
    assert " duplicates=0 " in report, report
