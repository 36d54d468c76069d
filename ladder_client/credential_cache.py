"""Access tokens the ladder lends (``GET /api/v1/connections/{id}/credential``), kept by a gateway
until shortly before they expire, for the deployments that borrow their key from the ladder."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from ladder_client.types import BorrowedCredential

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
        self.fetches = 0

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
            self.fetches += 1
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

    def forget(self, connection_id: str) -> None:
        """Drop a token the upstream refused (a 401): the next request borrows afresh."""
        self._tokens.pop(connection_id, None)
