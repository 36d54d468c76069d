"""The credential cache: tokens the ladder lends, kept until shortly before they expire, and one
fetch shared by concurrent requests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from ladder_client import BorrowedCredential
from ladder_client.credential_cache import CredentialCache

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_credentials_are_cached_until_shortly_before_expiry_and_shared_while_fetched() -> None:
    moments = [NOW]
    fetched: list[str] = []

    async def fetch(connection_id: str) -> BorrowedCredential:
        fetched.append(connection_id)
        await asyncio.sleep(0)
        return BorrowedCredential(
            access_token=f"token-{len(fetched)}", expires_at=NOW + timedelta(minutes=10), account_id=None
        )

    cache = CredentialCache(fetch, lead_s=60, now=lambda: moments[0])

    async def run() -> list[str]:
        first = await asyncio.gather(cache.token("plan"), cache.token("plan"))
        moments[0] = NOW + timedelta(minutes=8)
        cached = await cache.token("plan")
        moments[0] = NOW + timedelta(minutes=9, seconds=1)  # within the lead: borrowed again
        renewed = await cache.token("plan")
        return [*first, cached, renewed]

    assert asyncio.run(run()) == ["token-1", "token-1", "token-1", "token-2"]
    assert fetched == ["plan", "plan"]


def test_a_synchronous_caller_borrows_through_the_same_cache() -> None:
    fetched: list[str] = []

    def fetch(connection_id: str) -> BorrowedCredential:
        fetched.append(connection_id)
        return BorrowedCredential(
            access_token="lent", expires_at=NOW + timedelta(minutes=10), account_id=None
        )

    async def never(connection_id: str) -> BorrowedCredential:
        raise AssertionError("the synchronous borrow is cached for the event loop too")

    cache = CredentialCache(never, lead_s=60, now=lambda: NOW)
    assert [cache.token_sync("plan", fetch), cache.token_sync("plan", fetch)] == ["lent", "lent"]
    assert asyncio.run(cache.token("plan")) == "lent"
    assert fetched == ["plan"]
