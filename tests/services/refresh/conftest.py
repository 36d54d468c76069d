from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http_client:
        yield http_client
