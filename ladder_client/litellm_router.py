"""The ladder inside LiteLLM's Router (docs/LITELLM.md): ``LadderRoutingStrategy`` and
``install_ladder``, which puts it on a router with the callback (``ladder_client.litellm_callback``).

``LadderRoutingStrategy`` answers every pick of an ``auto/*`` model group by asking the ladder for
that auto id's pool, with the group's deployments as candidates (``ladder_client.litellm_deployments``
says what each must name), and returns the first deployment of the first pool entry. An empty pool
raises ``LadderPoolEmpty``; a LiteLLM fallback away from an ``auto/*`` group raises
``LadderFallbackRefused``: never a silent paid call.

LiteLLM is imported only here, in ``ladder_client.litellm_callback`` and in
``ladder_client.litellm_proxy`` (``pip install .[litellm]``).
"""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from typing import Any

import litellm
from litellm.types.router import CustomRoutingStrategyBase

from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.credential_cache import CredentialCache
from ladder_client.litellm_callback import LadderCallback
from ladder_client.litellm_deployments import (
    LadderConfigError,
    LadderFallbackRefused,
    LadderPoolEmpty,
    Target,
    group_deployments,
    is_auto_id,
    ladder_candidates,
    original_model_group,
)
from ladder_client.reporting import PerLoop
from ladder_client.types import Candidate, Resolution

# --- the routing strategy ---------------------------------------------------------------------


class LadderRoutingStrategy(CustomRoutingStrategyBase):
    """Picks every deployment of the router it is installed on (``install_ladder``).

    ``auto/*`` groups go to the ladder; a group of another name gets its first deployment (the
    strategy replaces LiteLLM's for the whole router). When the ladder cannot be asked, the
    request fails with the client's ``LadderError``: no guess, no fallback.

    The synchronous path asks with ``client``; the asynchronous one with an ``AsyncLadderClient``
    of the running loop (``loops``, shared with the callback): no thread per request, and one
    keep-alive connection pool. A deployment with ``model_info: {ladder_borrow_credential: true}``
    gets the access token the ladder lends for its connection as its ``api_key``, on the copy
    returned for this attempt only (cached until shortly before it expires)."""

    def __init__(self, router: litellm.Router, client: LadderClient, *, loops: PerLoop | None = None) -> None:
        self.router = router
        self.client = client
        self.loops = loops or PerLoop(lambda: client.twin(AsyncLadderClient))
        self.credentials = CredentialCache(lambda connection_id: self.loops.client.credential(connection_id))

    def _group(
        self, model_group: str, request_kwargs: Mapping[str, Any] | None
    ) -> tuple[dict[str, Any] | None, tuple[Candidate, ...], dict[Target, Mapping[str, Any]]]:
        """(the first deployment of a group outside the ladder, or None), the candidates of an
        ``auto/*`` group, and the deployment serving each (provider, model, connection)."""
        origin = original_model_group(request_kwargs)
        if origin is not None and origin != model_group and is_auto_id(origin):
            raise LadderFallbackRefused(origin, model_group)
        deployments = group_deployments(self.router, model_group)
        if not deployments:
            raise LadderConfigError(f"the router has no deployment in model group {model_group!r}")
        if not is_auto_id(model_group):
            return dict(deployments[0]), (), {}
        return None, *ladder_candidates(model_group, deployments)

    @staticmethod
    def _choose(
        model_group: str, resolution: Resolution, targets: Mapping[Target, Mapping[str, Any]]
    ) -> dict[str, Any]:
        if not resolution.pool:
            raise LadderPoolEmpty(model_group, resolution.empty, resolution)
        entry = resolution.pool[0]
        for connection_id in entry.allowed_connection_ids:
            deployment = targets.get((entry.provider, entry.model, connection_id))
            if deployment is not None:
                return dict(deployment)
        raise LadderConfigError(  # the ladder only filters what it was sent: a version mismatch
            f"{model_group}: the ladder's first pool entry {entry.provider}/{entry.model} "
            f"{list(entry.allowed_connection_ids)} matches no deployment"
        )

    # LiteLLM's base declares these `-> None` but documents "returns an element of model_list".
    def get_available_deployment(  # type: ignore[override]
        self,
        model: str,
        messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None,
        specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> dict[str, Any]:
        """The deployment for one attempt of a request for the model group ``model``, asked with
        ``client`` (synchronous)."""
        outside, candidates, targets = self._group(model, request_kwargs)
        if outside is not None:
            return outside
        chosen = self._choose(model, self.client.resolve(model, candidates), targets)
        return self.credentials.lend_sync(chosen, self.client.credential)

    async def async_get_available_deployment(  # type: ignore[override]
        self,
        model: str,
        messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None,
        specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> dict[str, Any]:
        """The same from the event loop, asked with the loop's client."""
        outside, candidates, targets = self._group(model, request_kwargs)
        if outside is not None:
            return outside
        chosen = self._choose(model, await self.loops.client.resolve(model, candidates), targets)
        return await self.credentials.lend(chosen)


# --- installing both --------------------------------------------------------------------------


def install_ladder(
    router: litellm.Router,
    client: LadderClient,
    *,
    report_headers: bool = True,
    reporter_options: Mapping[str, Any] | None = None,
) -> tuple[LadderRoutingStrategy, LadderCallback]:
    """Make ``router`` route through the ladder and report back to it.

    The strategy replaces the router's own picks (``register_plugin``, or, on LiteLLM releases
    without it, ``set_custom_routing_strategy``). The callback is registered with LiteLLM, which
    keeps callbacks process-wide: ``uninstall_callback`` removes it when the router goes away,
    sending the usage still queued (as the interpreter's exit does, if it is never called). Both
    share one ``AsyncLadderClient`` per event loop and its ``LadderReporter``
    (``reporter_options``: its queue and flush settings)."""
    loops = PerLoop(lambda: client.twin(AsyncLadderClient), reporter_options=reporter_options)
    strategy = LadderRoutingStrategy(router, client, loops=loops)
    register = getattr(router, "register_plugin", None)
    if callable(register):
        register(strategy)
    else:
        router.set_custom_routing_strategy(strategy)
    callback = LadderCallback(client, report_headers=report_headers, loops=loops)
    litellm.logging_callback_manager.add_litellm_callback(callback)
    atexit.register(callback.drain)
    return strategy, callback


def uninstall_callback(callback: LadderCallback) -> None:
    """Remove the callback from every list LiteLLM copied it into (not only ``litellm.callbacks``),
    and send the usage it still holds."""
    callback.drain()
    atexit.unregister(callback.drain)
    litellm.logging_callback_manager.remove_callback_from_all_lists(callback, require_self=False)
