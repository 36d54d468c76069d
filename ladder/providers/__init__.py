"""Provider adapters: poll a connection's quota, read passive headers, classify upstream failures.

Imports httpx and ``ladder.domain`` types only, never Django (STYLE.md).
"""

from ladder.providers.base import (
    DEFAULT_TIMEOUT,
    MAX_BODY_BYTES,
    BaseAdapter,
    ConnectionRef,
    FetchError,
    ProviderAdapter,
    classify_with_recheck,
    resolve_base_url,
)
from ladder.providers.registry import ADAPTERS, get_adapter

__all__ = [
    "ADAPTERS",
    "DEFAULT_TIMEOUT",
    "MAX_BODY_BYTES",
    "BaseAdapter",
    "ConnectionRef",
    "FetchError",
    "ProviderAdapter",
    "classify_with_recheck",
    "get_adapter",
    "resolve_base_url",
]
