from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl, load_fixtures
from devtools.fakeupstream.fixtures import KindFixture

FIXTURE_TIME = datetime(2026, 9, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def fixtures() -> dict[str, KindFixture]:
    return load_fixtures()


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    """A fake upstream whose clock is pinned at the fixture time (so nothing is shifted)."""
    with FakeUpstream(freeze_at=FIXTURE_TIME) as running:
        yield running


@pytest.fixture
def control(upstream: FakeUpstream) -> Iterator[FakeUpstreamControl]:
    with upstream.control() as ctl:
        yield ctl
