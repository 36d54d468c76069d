"""The dashboard's words for a window's forecast."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ladder.dashboard.wording import forecast_words

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)

CASES = [
    ("no forecast", None, NOW + H, ""),
    (
        "before its reset",
        NOW + 2 * H + timedelta(minutes=20),
        NOW + 3 * H,
        "runs out at 14:20 UTC, 40m before its reset",
    ),
    ("no reset", NOW + 2 * H, None, "runs out at 14:00 UTC"),
    ("days ahead", NOW + 30 * H, NOW + 50 * H, "runs out at 2026-09-16 18:00 UTC, 20h 00m before its reset"),
    ("another zone", datetime(2026, 9, 15, 16, 20, tzinfo=UTC).astimezone(), None, "runs out at 16:20 UTC"),
]


@pytest.mark.parametrize(
    ("exhausts_at", "reset_at", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_forecast_words(exhausts_at: datetime | None, reset_at: datetime | None, words: str) -> None:
    assert forecast_words(exhausts_at, reset_at, NOW) == words
