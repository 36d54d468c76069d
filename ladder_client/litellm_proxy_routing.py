"""How the proxy hook routes one ``auto/*`` request. Before the router, it may refuse it
(``refusal``: an empty pool, a ladder that cannot be asked) as ``fastapi.HTTPException``, which the
proxy turns into its error answer keeping the status and headers (LiteLLM's proxy always has
fastapi; without it, an exception carrying the same ``status_code``, ``detail`` and ``headers``).
Else the pool the ladder gave is kept under the request's id, and each attempt is narrowed to the
deployments of one connection (``first_allowed``). It reads LiteLLM's dicts and imports no LiteLLM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ladder_client.litellm_deployments import LadderPoolEmpty, ladder_target, model_info
from ladder_client.types import Resolution

POOL_KEY = "ladder_pool"  # in the request's metadata: [[provider, model, [connection ids]], ...]
REQUEST_KEY = "ladder_request_id"  # in the request's metadata: one id per client request
# What LiteLLM's retry loop says already failed in this request (when the release passes it).
LITELLM_SKIPPED_KEYS = ("_retry_skipped_deployment_ids", "_excluded_deployment_ids")

Pool = list[list[Any]]  # [[provider, model, [connection ids]], ...], the ladder's order


def pool_document(resolution: Resolution) -> Pool:
    return [[entry.provider, entry.model, list(entry.allowed_connection_ids)] for entry in resolution.pool]


def skipped_by_litellm(request_kwargs: Mapping[str, Any] | None) -> set[str]:
    """The ids of the deployments LiteLLM's retry loop says already failed in this request."""
    skipped: set[str] = set()
    for key in LITELLM_SKIPPED_KEYS:
        ids = (request_kwargs or {}).get(key)
        if isinstance(ids, list | tuple):
            skipped.update(str(ident) for ident in ids)
    return skipped


def first_allowed(pool: Pool, deployments: Sequence[Any], failed: set[str]) -> list[Any]:
    """The deployments of the first allowed connection of the first pool entry that still has one
    (the ladder's order, as the Router integration picks), leaving out those that ``failed`` in this
    request, so that a retry after a 429 climbs exactly one rung. One connection only: plans are
    spent in the ladder's order, and its quota headers coalesce (one connection's reports at most
    once a second) instead of each request landing on another plan."""
    for provider, ladder_model, connection_ids in pool:
        rank: dict[str, int] = {}
        for index, connection in enumerate(connection_ids):
            rank.setdefault(connection, index)
        best, chosen = len(rank), list[Any]()
        for deployment in deployments:
            target = ladder_target(deployment) if isinstance(deployment, Mapping) else None
            if target is None or target[0] != provider or target[1] != ladder_model:
                continue
            place = rank.get(target[2], best + 1)
            ident = model_info(deployment).get("id")
            if place > best or (ident is not None and str(ident) in failed):
                continue
            if place < best:
                best, chosen = place, list[Any]()
            chosen.append(deployment)
        if chosen:
            return chosen
    return []


# --- refusals ---------------------------------------------------------------------------------


class LadderRefusal(Exception):
    """A refusal where fastapi is missing: the attributes the proxy reads off an HTTPException."""

    def __init__(self, status_code: int, detail: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(detail.get("message", ""))
        self.status_code = status_code
        self.detail = detail
        self.headers = headers


def refusal(status_code: int, detail: dict[str, Any], retry_after_s: float | None) -> Exception:
    headers = {} if retry_after_s is None else {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
    try:  # fastapi: the proxy's own dependency, absent where the hook is only imported
        from fastapi import HTTPException  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return LadderRefusal(status_code, detail, headers)
    return HTTPException(status_code=status_code, detail=detail, headers=headers)


def empty_pool_refusal(empty: LadderPoolEmpty, now: datetime) -> Exception:
    """429 with Retry-After when the ladder expects quota back at ``retry_at``, else 503; the body
    carries the ladder's code, message and every excluded pair's reason."""
    detail = {
        "message": f"{empty.auto_id}: no pool ({empty.code}): {empty.message}",
        "code": empty.code,
        "auto_id": empty.auto_id,
        "retry_at": empty.retry_at.isoformat() if empty.retry_at is not None else None,
        "reasons": [
            {
                name: getattr(excluded, name)
                for name in ("provider", "model", "connection_id", "reason", "detail")
            }
            for excluded in empty.resolution.excluded
        ],
    }
    retry_after_s = empty.retry_after_s(now)
    return refusal(503 if retry_after_s is None else 429, detail, retry_after_s)
