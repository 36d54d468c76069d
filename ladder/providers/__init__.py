"""Provider adapters: poll a connection's quota, read passive headers, classify upstream failures.

Imports httpx and ``ladder.domain`` types only, never Django (STYLE.md). What the other rooms use is
named here; the adapters' shared steps are in ``base``.
"""

from ladder.providers.base import DEFAULT_TIMEOUT, ConnectionRef, FetchError, ProviderAdapter
from ladder.providers.registry import ADAPTERS, get_adapter

__all__ = ["ADAPTERS", "DEFAULT_TIMEOUT", "ConnectionRef", "FetchError", "ProviderAdapter", "get_adapter"]
