"""The deployments of a LiteLLM model group as the ladder sees them (docs/LITELLM.md), and the errors
that end an ``auto/*`` request. Shared by the Router's strategy (``ladder_client.litellm_router``)
and the proxy's hook (``ladder_client.litellm_proxy``); it reads LiteLLM's dicts and imports no
LiteLLM.

Each deployment of an ``auto/*`` group names its ladder connection and what the ladder calls its
provider and model, in ``model_info``::

    {"model_name": "auto/thrifty",
     "litellm_params": {"model": "anthropic/claude-sonnet-4-5", ...},
     "model_info": {"ladder_connection_id": "claude-max", "ladder_provider": "claude",
                    "ladder_model": "claude-sonnet-4-5"}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ladder_client.types import Candidate, EmptyPool, Resolution

AUTO_PREFIX = "auto/"
CONNECTION_KEY = "ladder_connection_id"
PROVIDER_KEY = "ladder_provider"
MODEL_KEY = "ladder_model"
LADDER_KEYS = (CONNECTION_KEY, PROVIDER_KEY, MODEL_KEY)
BORROW_KEY = "ladder_borrow_credential"  # in a deployment's model_info: take its key from the ladder
# Where LiteLLM keeps the request's metadata: `metadata` for completions, `litellm_metadata` for
# the newer endpoints. A fallback hop carries the group the request was first made for there.
METADATA_BUCKETS = ("metadata", "litellm_metadata")

# (ladder provider, ladder model, connection id) of a deployment
Target = tuple[str, str, str]


def is_auto_id(model_group: str) -> bool:
    return model_group.startswith(AUTO_PREFIX)


# --- errors -----------------------------------------------------------------------------------


class LadderRoutingError(Exception):
    """An answer of the ladder that ends the request here."""

    # LiteLLM's router reads `num_retries` off an exception: 0 tells it this error is final, so it
    # does not ask the ladder again (and sleep between attempts) for the same answer.
    num_retries = 0


class LadderPoolEmpty(LadderRoutingError):
    """The ladder has no pool for this auto id now (DESIGN L9): the honest answer, never a fallback.

    ``retry_at`` is the earliest time quota is expected back (None: nothing the clock will fix);
    ``code``/``message`` are the ladder's ``empty`` reason; ``resolution`` is the whole answer, with
    every excluded pair and why."""

    def __init__(self, auto_id: str, empty: EmptyPool | None, resolution: Resolution) -> None:
        self.auto_id = auto_id
        self.code = empty.code if empty is not None else "empty_pool"
        self.message = empty.message if empty is not None else "the ladder returned an empty pool"
        self.retry_at: datetime | None = empty.retry_at if empty is not None else None
        self.resolution = resolution
        when = f"; quota expected back at {self.retry_at.isoformat()}" if self.retry_at else ""
        super().__init__(f"{auto_id}: no pool ({self.code}): {self.message}{when}")

    def retry_after_s(self, now: datetime) -> float | None:
        """Seconds until ``retry_at`` from ``now`` (for a Retry-After header), None without one."""
        if self.retry_at is None:
            return None
        return max(0.0, (self.retry_at - now).total_seconds())


class LadderFallbackRefused(LadderRoutingError):
    """LiteLLM tried to serve a request for an ``auto/*`` group from another group (its fallbacks).

    The ladder alone decides where ``auto/*`` traffic goes; a router-level fallback would be the
    silent paid fallback the ladder exists to prevent. The request ends with its original error."""

    def __init__(self, auto_id: str, fallback_group: str) -> None:
        self.auto_id = auto_id
        self.fallback_group = fallback_group
        super().__init__(
            f"{auto_id}: refused LiteLLM's fallback to model group {fallback_group!r}; "
            "only the ladder chooses where auto/* requests go"
        )


class LadderConfigError(LadderRoutingError, ValueError):
    """A deployment of an ``auto/*`` group that the ladder cannot route (its model_info is incomplete)."""


# --- the deployments of a group as ladder candidates -------------------------------------------


def model_info(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    info = deployment.get("model_info")
    return info if isinstance(info, Mapping) else {}


def ladder_target(deployment: Mapping[str, Any]) -> Target | None:
    """(provider, model, connection id) of a ladder deployment; None for another. Runs for every
    deployment of every attempt in the proxy (``make bench-gateway``): plain lookups."""
    info = deployment.get("model_info")
    if not isinstance(info, dict | Mapping):  # dict first: the common case, checked fastest
        return None
    connection_id, provider, model = info.get(CONNECTION_KEY), info.get(PROVIDER_KEY), info.get(MODEL_KEY)
    if not (isinstance(connection_id, str) and isinstance(provider, str) and isinstance(model, str)):
        return None
    return (provider, model, connection_id) if connection_id and provider and model else None


def ladder_candidates(
    model_group: str, deployments: Sequence[Mapping[str, Any]]
) -> tuple[tuple[Candidate, ...], dict[Target, Mapping[str, Any]]]:
    """One logical candidate per (ladder provider, ladder model), its connections in deployment
    order, and the deployment serving each (provider, model, connection): the first one listed."""
    allowed: dict[tuple[str, str], list[str]] = {}
    targets: dict[Target, Mapping[str, Any]] = {}
    for deployment in deployments:
        target = ladder_target(deployment)
        if target is None:
            info = model_info(deployment)
            missing = [key for key in LADDER_KEYS if not isinstance(info.get(key), str) or not info[key]]
            params = deployment.get("litellm_params")
            name = info.get("id") or (params.get("model") if isinstance(params, Mapping) else None) or "?"
            raise LadderConfigError(
                f"{model_group}: deployment {name!r} needs model_info {', '.join(missing)} "
                "(strings) so that the ladder can route it"
            )
        provider, model, connection_id = target
        connections = allowed.setdefault((provider, model), [])
        if connection_id not in connections:
            connections.append(connection_id)
        targets.setdefault(target, deployment)
    candidates = tuple(
        Candidate(provider=provider, model=model, connection_id=None, allowed_connection_ids=tuple(ids))
        for (provider, model), ids in allowed.items()
    )
    return candidates, targets


def group_deployments(router: Any, model_group: str) -> list[Mapping[str, Any]]:
    """The deployments of a model group, as the router lists them."""
    registry = getattr(router, "registry", None)
    if callable(registry):
        found = registry().deployments(model_group)
    else:  # LiteLLM releases before the registry view
        found = router.get_model_list(model_name=model_group)
    return [deployment for deployment in found or () if isinstance(deployment, Mapping)]


def metadata_buckets(data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [bucket for name in METADATA_BUCKETS if isinstance(bucket := (data or {}).get(name), dict)]


def from_metadata(data: Mapping[str, Any] | None, key: str) -> Any:
    for bucket in metadata_buckets(data):
        if key in bucket:
            return bucket[key]
    return None


def original_model_group(request_kwargs: Mapping[str, Any] | None) -> str | None:
    """The group a request was first made for (LiteLLM stamps it before any fallback hop)."""
    group = from_metadata(request_kwargs, "original_model_group")
    return group if isinstance(group, str) and group else None


# --- borrowed credentials ---------------------------------------------------------------------


def borrows_credential(deployment: Mapping[str, Any]) -> str | None:
    """The connection whose lent token a deployment uses as its key; None when it has its own."""
    info = model_info(deployment)
    connection_id = info.get(CONNECTION_KEY)
    if info.get(BORROW_KEY) is True and isinstance(connection_id, str) and connection_id:
        return connection_id
    return None


def with_api_key(deployment: Mapping[str, Any], api_key: str) -> dict[str, Any]:
    """A copy of the deployment calling with ``api_key`` (the router's own entry is untouched)."""
    params = deployment.get("litellm_params")
    lent = dict(deployment)
    lent["litellm_params"] = {**(params if isinstance(params, Mapping) else {}), "api_key": api_key}
    return lent
