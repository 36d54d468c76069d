"""A typed Python client of the OmniRoute Ladder gateway API, and a LiteLLM integration.

``ladder_client`` needs httpx and msgspec: of the ladder it imports only the wire shapes
(``ladder.contract``, which imports the pure ``ladder.domain``), never Django. The LiteLLM routing
strategy and callback live in ``ladder_client.litellm_router`` (``pip install .[litellm]``), which is
the only module that imports LiteLLM.
"""

from ladder_client.client import LadderClient, LadderError, ResolutionCache
from ladder_client.types import (
    BorrowedCredential,
    Candidate,
    ConnectionsReport,
    ConnectionState,
    CredentialSummary,
    EmptyPool,
    Excluded,
    FailureOutcome,
    LadderProtocolError,
    PoolEntry,
    QuotaWindow,
    Reading,
    Resolution,
    RungBudget,
    UsageEvent,
    UsageRecorded,
    UsageReport,
)

__all__ = [
    "BorrowedCredential",
    "Candidate",
    "ConnectionState",
    "ConnectionsReport",
    "CredentialSummary",
    "EmptyPool",
    "Excluded",
    "FailureOutcome",
    "LadderClient",
    "LadderError",
    "LadderProtocolError",
    "PoolEntry",
    "QuotaWindow",
    "Reading",
    "Resolution",
    "ResolutionCache",
    "RungBudget",
    "UsageEvent",
    "UsageRecorded",
    "UsageReport",
]
