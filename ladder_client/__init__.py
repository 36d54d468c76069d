"""A typed Python client of the OmniRoute Ladder gateway API, and a LiteLLM integration.

``ladder_client`` needs httpx, msgspec and stamina: of the ladder it imports only the wire shapes
(``ladder.contract``, which imports the pure ``ladder.domain``), never Django. The API's calls are
written once (``ladder_client.calls``) under one set of rules (``ladder_client.core``); ``LadderClient``
sends them from a thread, ``AsyncLadderClient`` (``ladder_client.aclient``) from an event loop, and
``ladder_client.reporting`` batches what a gateway reports. The LiteLLM integrations
(``pip install .[litellm]``) are the only modules that import LiteLLM: the Router's strategy in
``ladder_client.litellm_router``, its callback in ``ladder_client.litellm_callback``, the proxy's hook
in ``ladder_client.litellm_proxy``.
"""
# ruff: noqa: F401  (the package's public names: `from ladder_client import LadderClient`)

from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.core import ResolutionCache
from ladder_client.errors import LadderError, LadderProtocolError
from ladder_client.types import (
    BorrowedCredential,
    Candidate,
    ConnectionsReport,
    ConnectionState,
    CredentialSummary,
    EmptyPool,
    Excluded,
    FailureOutcome,
    PoolEntry,
    QuotaWindow,
    Reading,
    Resolution,
    RungBudget,
    UsageEvent,
    UsageRecorded,
    UsageReport,
)

