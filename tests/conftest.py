from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from cryptography.fernet import Fernet
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.domain.windows import PROVIDER_POLL_FLOOR_S

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TEST_CREDENTIAL_KEY = Fernet.generate_key().decode()
# Hot-state keys of this test run stay apart from a running demo's and from other runs'.
TEST_HOTSTATE_PREFIX = f"ladder:test:{uuid.uuid4().hex[:12]}"
NO_POLL_FLOORS = dict.fromkeys(PROVIDER_POLL_FLOOR_S, 0.0)

# One profile mechanism for every property test. `make test` runs the default profile (each test's own
# small count); `make soak` sets HYPOTHESIS_PROFILE=nightly: at least 10,000 examples per property.
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
NIGHTLY_EXAMPLES = 10_000
hypothesis_settings.register_profile(
    "default",
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.register_profile(
    "nightly", hypothesis_settings.get_profile("default"), max_examples=NIGHTLY_EXAMPLES
)
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


def examples(default: int, *, nightly: int = NIGHTLY_EXAMPLES) -> int:
    """A property's example count: `default` in the default run, `nightly` under the nightly profile."""
    return default if HYPOTHESIS_PROFILE == "default" else max(nightly, default)


@pytest.fixture(autouse=True)
def _credential_key(settings: pytest.FixtureRequest) -> None:
    settings.LADDER_CREDENTIAL_KEY = TEST_CREDENTIAL_KEY  # type: ignore[attr-defined]
    settings.LADDER_HOTSTATE_PREFIX = TEST_HOTSTATE_PREFIX  # type: ignore[attr-defined]
    settings.LADDER_RATELIMIT_PREFIX = f"{TEST_HOTSTATE_PREFIX}:ratelimit"  # type: ignore[attr-defined]
    # The adapters' poll floors (Claude: 300 s) are lifted: most tests poll a Claude connection
    # several times a minute. Tests of the floors set their own (DESIGN L5).
    settings.LADDER_POLL_FLOOR_S = NO_POLL_FLOORS  # type: ignore[attr-defined]


@pytest.fixture
def shared_dir() -> Path:
    return SHARED


@pytest.fixture(autouse=True, scope="session")
def _hotstate_cleanup() -> object:
    """Remove this run's hot-state keys from the shared Redis when the run ends."""
    yield
    from django.conf import settings

    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.5)
        for key in client.scan_iter(f"{TEST_HOTSTATE_PREFIX}*"):
            client.delete(key)
    except redis.RedisError:
        pass


TEST_REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture
def hot(settings: Any) -> Iterator[redis.Redis]:
    """The hot state in Redis DB 15 under a prefix of this test's own; its keys are removed after."""
    from ladder.security.redis_breaker import redis_forget_outages

    prefix = f"test-hot:{uuid.uuid4().hex}"
    settings.LADDER_HOTSTATE_REDIS_URL = TEST_REDIS_URL
    settings.LADDER_HOTSTATE_PREFIX = prefix
    redis_forget_outages()
    client = redis.Redis.from_url(TEST_REDIS_URL)
    yield client
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
    redis_forget_outages()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    """A fake upstream of this module's own, on a free port."""
    with FakeUpstream() as running:
        yield running


@pytest.fixture
def control(upstream: FakeUpstream) -> Iterator[FakeUpstreamControl]:
    with upstream.control() as ctl:
        ctl.reset()
        yield ctl
        ctl.reset()
