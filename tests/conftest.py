from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TEST_CREDENTIAL_KEY = Fernet.generate_key().decode()


@pytest.fixture(autouse=True)
def _credential_key(settings: pytest.FixtureRequest) -> None:
    settings.LADDER_CREDENTIAL_KEY = TEST_CREDENTIAL_KEY  # type: ignore[attr-defined]


@pytest.fixture
def shared_dir() -> Path:
    return SHARED
