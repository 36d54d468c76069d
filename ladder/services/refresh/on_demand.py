"""Refreshes asked for by resolutions and operators: queued once, and known to be pending until the
run ends."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from ladder.selectors.hotstate import redis_client, redis_key_prefix
from ladder.services.enqueue import enqueue_once
from ladder.services.hotstate import tolerated


def refresh_pending_key(connection_id: str) -> str:
    return f"{redis_key_prefix()}:refresh_pending:{connection_id}"


def refresh_request(*, connection_ids: Iterable[str]) -> list[str]:
    """Queue an immediate refresh of these connections (a resolution's ``refresh`` list): one
    ``ladder.tasks.refresh_connections`` message, sent when the current transaction commits.

    Deduplicated: a connection already queued within ``LADDER_REFRESH_REQUEST_DEDUPE_S`` is not
    queued again (its pending key, ``SET NX`` with that TTL). Never raises: with Redis down nothing is
    queued (logged; the beat fan-out still polls the connection when due); a broker that refuses the
    message clears the keys. Returns the ids queued."""
    ttl_s = max(1, int(settings.LADDER_REFRESH_REQUEST_DEDUPE_S))
    keys = {refresh_pending_key(cid): cid for cid in connection_ids if isinstance(cid, str) and cid}
    return enqueue_once("ladder.tasks.refresh_connections", keys, ttl_s=ttl_s, batch=True)


def refresh_is_pending(*, connection_id: str) -> bool:
    """Whether a requested refresh of this connection is queued or running (its dedupe key is set
    until the task finishes, or for ``LADDER_REFRESH_REQUEST_DEDUPE_S`` at most). False when Redis
    is unavailable: nothing can be known to be pending then."""
    with tolerated():
        return bool(redis_client().exists(refresh_pending_key(connection_id)))
    return False


def refresh_pending_clear(connection_ids: Iterable[str]) -> None:
    keys = [refresh_pending_key(cid) for cid in connection_ids]
    with tolerated():
        if keys:
            redis_client().delete(*keys)
