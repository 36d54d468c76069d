from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _hot_state_prefix(settings: pytest.FixtureRequest) -> None:
    # Readings written by the tests must not land in the shared Redis under the demo's keys.
    settings.LADDER_HOTSTATE_PREFIX = "ladder:test-dashboard"  # type: ignore[attr-defined]
