"""The credential kinds the domain names without the adapters (ladder.domain.credentials)."""

from __future__ import annotations

import pytest

from ladder.domain.credentials import CREDENTIAL_KINDS, connection_kind
from ladder.domain.types import Connection
from ladder.providers.registry import ADAPTERS, get_adapter


def test_it_names_the_kind_of_every_adapter_as_the_registry_does() -> None:
    assert {(a.provider, a.auth_type): kind for kind, a in ADAPTERS.items()} == CREDENTIAL_KINDS


@pytest.mark.parametrize(
    ("provider", "auth_type"),
    [
        *CREDENTIAL_KINDS,
        *((provider, None) for provider, _ in CREDENTIAL_KINDS),
        (" Claude ", " OAUTH "),
        ("claude", "  "),
        ("claude", "apikey"),
        ("overflowing", "apikey"),
        ("overflowing", None),
    ],
)
def test_it_finds_the_kind_the_registry_finds(provider: str, auth_type: str | None) -> None:
    adapter = get_adapter(provider, auth_type)
    expected = adapter.kind if adapter is not None else None
    assert connection_kind(Connection(id="c", provider=provider, auth_type=auth_type)) == expected
