from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conftest import TEST_HOTSTATE_PREFIX, TEST_REDIS_URL


@pytest.fixture(autouse=True)
def _security_settings(settings: Any) -> None:
    settings.LADDER_HOTSTATE_PREFIX = f"{TEST_HOTSTATE_PREFIX}:security"
    # Password hashing is not what these tests measure; the default costs ~0.3 s a login here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def own_counts(settings: Any) -> Iterator[tuple[redis.Redis, str]]:
    """The rate limits' counts on the real Redis (DB 15), under a key prefix of this test's own."""
    prefix = f"test-security:{uuid.uuid4().hex}"
    settings.REDIS_URL = TEST_REDIS_URL
    settings.LADDER_RATELIMIT_PREFIX = prefix
    client = redis.Redis.from_url(TEST_REDIS_URL)
    yield client, prefix
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
