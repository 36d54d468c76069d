from __future__ import annotations

import re

import pytest

from omniroute import settings as settings_module
from omniroute.settings import envdays
from tests.conftest import ROOT

SOURCE_DIRS = ("ladder", "ladder_client", "omniroute")
SETTING_READ = re.compile(r"\bsettings\.(LADDER_[A-Z0-9_]+)")


@pytest.mark.parametrize(("raw", "days"), [("30", 30.0), ("1", 1.0), ("0.5e2", 50.0), ("36500", 36_500.0)])
def test_it_reads_a_retention_in_days(monkeypatch: pytest.MonkeyPatch, raw: str, days: float) -> None:
    monkeypatch.setenv("LADDER_TEST_RETENTION_DAYS", raw)
    assert envdays("LADDER_TEST_RETENTION_DAYS", "30") == days


def test_it_takes_the_default_when_the_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LADDER_TEST_RETENTION_DAYS", raising=False)
    assert envdays("LADDER_TEST_RETENTION_DAYS", "90") == 90.0


@pytest.mark.parametrize("raw", ["0", "-5", "0.5", "36501", "inf", "nan", "1e400", "forever", ""])
def test_it_refuses_a_retention_that_would_purge_everything_or_overflow(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("LADDER_TEST_RETENTION_DAYS", raw)
    with pytest.raises(
        ValueError, match=r"LADDER_TEST_RETENTION_DAYS: expected a number of days from 1 to 36500"
    ):
        envdays("LADDER_TEST_RETENTION_DAYS", "30")


def source_files() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(ROOT)), path.read_text())
        for folder in SOURCE_DIRS
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]


def test_it_declares_every_ladder_setting_the_code_reads() -> None:
    read = {(path, name) for path, text in source_files() for name in SETTING_READ.findall(text)}
    assert read  # the pattern still finds the reads
    undeclared = sorted((path, name) for path, name in read if not hasattr(settings_module, name))
    assert undeclared == []


def test_it_reads_settings_without_a_second_default() -> None:
    """A setting's default is written once, in omniroute/settings.py; getattr with a fallback would
    write it again (and hide a setting that was never declared)."""
    offenders = [path for path, text in source_files() if "getattr(settings," in text]
    assert offenders == []
