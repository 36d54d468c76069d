"""Access tokens the ladder lends (``GET /api/v1/connections/{id}/credential``), kept by a gateway
until shortly before they expire, for the deployments that borrow their key from the ladder."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from ladder_client.litellm_deployments import borrows_credential, with_api_key
from ladder_client.types import BorrowedCredential

D = TypeVar("D", bound=Mapping[str, Any])

DEFAULT_CREDENTIAL_LEAD_S = 60.0


class CredentialCache:
    """Access tokens borrowed from the ladder (``GET /api/v1/connections/{id}/credential``), kept
    until ``lead_s`` before they expire. Concurrent requests for one connection share one fetch."""

    def __init__(
        self,
        fetch: Callable[[str], Awaitable[BorrowedCredential]],
        *,
        lead_s: float = DEFAULT_CREDENTIAL_LEAD_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._fetch = fetch
        self.lead = timedelta(seconds=lead_s)
        self._now = now
        self._tokens: dict[str, BorrowedCredential] = {}
        self._inflight: dict[str, asyncio.Future[BorrowedCredential]] = {}

    def fresh(self, connection_id: str) -> str | None:
        held = self._tokens.get(connection_id)
        if held is None:
            return None
        if held.expires_at is not None and self._now() >= held.expires_at - self.lead:
            del self._tokens[connection_id]
            return None
        return held.access_token

    async def token(self, connection_id: str) -> str:
        """The connection's access token (LadderError when the ladder will not lend one)."""
        held = self.fresh(connection_id)
        if held is not None:
            return held
        inflight = self._inflight.get(connection_id)
        if inflight is None:
            inflight = asyncio.ensure_future(self._borrow(connection_id))
            self._inflight[connection_id] = inflight
        credential = await asyncio.shield(inflight)
        return credential.access_token

    async def _borrow(self, connection_id: str) -> BorrowedCredential:
        try:
            credential = await self._fetch(connection_id)
            self._tokens[connection_id] = credential
            return credential
        finally:
            self._inflight.pop(connection_id, None)

    def token_sync(self, connection_id: str, fetch: Callable[[str], BorrowedCredential]) -> str:
        """The connection's access token, borrowed with a synchronous ``fetch`` when none is held."""
        held = self.fresh(connection_id)
        if held is None:
            self._tokens[connection_id] = credential = fetch(connection_id)
            held = credential.access_token
        return held

    async def lend(self, deployment: D) -> D | dict[str, Any]:
        """``deployment``, or a copy calling with its connection's lent token when it borrows one
        (``ladder_borrow_credential``): the router's own entry is untouched."""
        connection_id = borrows_credential(deployment)
        if connection_id is None:
            return deployment
        return with_api_key(deployment, await self.token(connection_id))

    def lend_sync(self, deployment: D, fetch: Callable[[str], BorrowedCredential]) -> D | dict[str, Any]:
        """The same, borrowing with a synchronous ``fetch`` when no token is held."""
        connection_id = borrows_credential(deployment)
        if connection_id is None:
            return deployment
        return with_api_key(deployment, self.token_sync(connection_id, fetch))

    def forget(self, connection_id: str) -> None:
        """Drop a token the upstream refused (a 401): the next request borrows afresh."""
        self._tokens.pop(connection_id, None)
