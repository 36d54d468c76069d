from __future__ import annotations

import pytest

from omniroute.settings import envdays


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
