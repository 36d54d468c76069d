from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TEST_CREDENTIAL_KEY = Fernet.generate_key().decode()
# Hot-state keys of this test run stay apart from a running demo's and from other runs'.
TEST_HOTSTATE_PREFIX = f"ladder:test:{uuid.uuid4().hex[:12]}"


@pytest.fixture(autouse=True)
def _credential_key(settings: pytest.FixtureRequest) -> None:
    settings.LADDER_CREDENTIAL_KEY = TEST_CREDENTIAL_KEY  # type: ignore[attr-defined]
    settings.LADDER_HOTSTATE_PREFIX = TEST_HOTSTATE_PREFIX  # type: ignore[attr-defined]


@pytest.fixture
def shared_dir() -> Path:
    return SHARED


@pytest.fixture(autouse=True, scope="session")
def _hotstate_cleanup() -> object:
    """Remove this run's hot-state keys from the shared Redis when the run ends."""
    yield
    import redis
    from django.conf import settings

    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.5)
        for key in client.scan_iter(f"{TEST_HOTSTATE_PREFIX}*"):
            client.delete(key)
    except redis.RedisError:
        pass
