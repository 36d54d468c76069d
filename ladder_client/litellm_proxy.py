"""The ladder inside the LiteLLM proxy: one ``CustomLogger`` loaded from ``config.yaml``.

A proxy ``config.yaml`` cannot install a routing strategy, but it loads a callback instance from a
Python file beside it::

    # ladder_hook.py, next to config.yaml
    from ladder_client.litellm_proxy import proxy_handler_instance

    # config.yaml
    model_list:
      - model_name: auto/subscription
        litellm_params: {model: anthropic/claude-sonnet-4-5, api_key: os.environ/CLAUDE_KEY}
        model_info: {ladder_connection_id: claude-max, ladder_provider: claude,
                     ladder_model: claude-sonnet-4-5}
    litellm_settings:
      callbacks: ladder_hook.proxy_handler_instance

Environment: ``LADDER_URL`` (the ladder's base URL) and ``LADDER_TOKEN`` (a gateway token with
scopes resolve and report; ``credentials`` too for borrowed keys); optional
``LADDER_RESOLVE_CACHE_S`` (keep each resolution that long; default 0 = off),
``LADDER_TIMEOUT_S`` (each call to the ladder; default 5) and ``LADDER_PROXY_CONFIG`` (the
config.yaml to check at start-up, when the proxy's own path cannot be read).

The hooks (what runs when):

- ``async_pre_call_hook`` (before the router; LiteLLM calls it only because this class defines it):
  a request for an ``auto/*`` model group is resolved by the ladder with that group's deployments
  as candidates. An empty pool is refused here, before any router fallback can run: 429 with
  ``Retry-After`` from the ladder's ``retry_at`` when there is one, else 503; the body carries the
  ladder's code, message and every excluded pair's reason. A ladder that cannot be asked gives 503
  with ``Retry-After``: never a guess. Fallbacks the client sent are stripped and
  ``disable_fallbacks`` set; the pool goes into the request's metadata. Other model names pass
  untouched.
- ``async_filter_deployments`` (every attempt, after LiteLLM's cooldown filter; see
  ``ladder_client.litellm_proxy_routing``): narrows the attempt to the deployments of the first
  allowed connection of the first pool entry that still has one (the order the ladder gave, as the
  Router integration picks), leaving out those that already failed in this request, so that a
  retry after a 429 climbs exactly one rung. A request that did not pass the pre-call hook is
  resolved here (an empty pool raises ``LadderPoolEmpty``, which LiteLLM does not retry).
- ``async_log_failure_event``: an upstream error answer is reported at once and awaited (LiteLLM
  awaits the hook before it retries), so the ladder has heard it before the retry is routed.
- ``async_log_success_event``: usage is queued and sent in batches; quota headers are coalesced
  per connection (``ladder_client.reporting``). Both outcome hooks are ``ReportingHooks``'
  (``ladder_client.litellm_callback``), shared with the Router's callback.

The refusals are ``fastapi.HTTPException`` (``ladder_client.litellm_proxy_routing``).

Start-up check: when the proxy loads this module (``get_instance_fn``, while it reads the config),
the config file it is reading (``litellm.proxy.proxy_server.user_config_file_path``, or
``LADDER_PROXY_CONFIG``) is checked with ``validate_proxy_config``
(``ladder_client.litellm_proxy_config``); a problem raises ``LadderConfigError`` naming the entry,
and the proxy does not start. The live router is checked again at the first ``auto/*`` request (a
config kept in the proxy's database, say): then every ``auto/*`` request is refused with 503
``config_error`` until it is fixed.

Borrowed credentials: a deployment with ``model_info: {ladder_borrow_credential: true}`` takes its
API key from the ladder (``GET /api/v1/connections/{id}/credential``) for its connection, kept
until a minute before it expires; the key is set on the deployment the filter hands to that
attempt only.

Hooks used (all on ``CustomLogger``): ``async_pre_call_hook`` (proxy-only, in every 1.x proxy
release; the proxy calls it only when the hook's own class defines it: it reads
``vars(type(callback))``, so a subclass of ``LadderProxyHook`` must define it again),
``async_filter_deployments`` (the Router's per-attempt filter, present in 1.80, 1.108.7 and
1.110.2), and ``async_log_success_event``/``async_log_failure_event`` (every 1.x release; LiteLLM
awaits the failure hook before its retry). Checked in the source of 1.110.2 (the ladder's
``.venv``, where the tests call these methods with a real Router); the proxy itself runs 1.108.7,
the newest ``litellm[proxy]`` that installs here.
"""

from __future__ import annotations

import atexit
import logging
import operator
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from ladder_client import litellm_proxy_config as config
from ladder_client import litellm_proxy_routing as routing
from ladder_client.aclient import DEFAULT_MAX_CONNECTIONS, AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.core import DEFAULT_TIMEOUT_S, LastKept
from ladder_client.credential_cache import CredentialCache
from ladder_client.errors import LadderError
from ladder_client.litellm_callback import ReportingHooks
from ladder_client.litellm_deployments import (
    LadderConfigError,
    LadderPoolEmpty,
    LadderRoutingError,
    borrows_credential,
    from_metadata,
    group_deployments,
    is_auto_id,
    ladder_candidates,
    metadata_buckets,
)
from ladder_client.litellm_outcomes import answering_connection, answering_model_info
from ladder_client.reporting import PerLoop
from ladder_client.types import Candidate

logger = logging.getLogger(__name__)

UNREACHABLE_RETRY_AFTER_S = 5
FAILED_REQUESTS_KEPT = 4096
# Auto groups whose candidates are kept: a wildcard deployment (auto/*) makes a group of each name a
# client sends, and LiteLLM hands copies for those (never the same objects: each is read anew).
GROUPS_KEPT = 64


# --- the hook ------------------------------------------------------------------------------


class LadderProxyHook(ReportingHooks):
    """The proxy's hook (see the module's docstring). ``router`` defaults to the proxy's own
    ``llm_router``; ``client`` to an ``AsyncLadderClient`` made from the environment at first use."""

    def __init__(
        self,
        *,
        url: str | None = None,
        token: str | None = None,
        cache_ttl_s: float = 0.0,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        router: Any = None,
        client: AsyncLadderClient | None = None,
        reporter_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(PerLoop(self._make_client, client=client, reporter_options=reporter_options))
        self.url = url
        self.token = token
        self.cache_ttl_s = cache_ttl_s
        self.timeout_s = timeout_s
        self.router = router
        self._given_client = client
        self.credentials = CredentialCache(lambda connection_id: self.client.credential(connection_id))
        # What each recent request knows, by request id: the deployments that failed in it, and the
        # pool the pre-call hook resolved (the filter trusts only these, never a ``ladder_pool`` that
        # the client wrote into its own metadata; an evicted pool is resolved again: fail closed).
        self._failed: LastKept[str, set[str]] = LastKept(FAILED_REQUESTS_KEPT)
        self._pools: LastKept[str, routing.Pool] = LastKept(FAILED_REQUESTS_KEPT)
        # Each auto group's candidates, with the deployments they were read from (see _candidates).
        self._groups: LastKept[str, tuple[tuple[Any, ...], tuple[Candidate, ...]]] = LastKept(GROUPS_KEPT)
        self._checked_router: int | None = None
        self._router_problems: list[str] = []

    @classmethod
    def from_environment(cls) -> LadderProxyHook:
        cache_ttl_s = config.env_seconds(config.CACHE_ENV, 0.0, zero_allowed=True)
        timeout_s = config.env_seconds(config.TIMEOUT_ENV, DEFAULT_TIMEOUT_S, zero_allowed=False)
        flush = config.env_seconds(config.FLUSH_ENV, 0.0, zero_allowed=False)  # unset: the reporter's default
        return cls(
            url=os.environ.get(config.URL_ENV),
            token=os.environ.get(config.TOKEN_ENV),
            cache_ttl_s=cache_ttl_s,
            timeout_s=timeout_s,
            reporter_options={"flush_interval_s": flush} if flush else None,
        )

    def check_start_up(self) -> None:
        """At proxy start-up: the config file checked, and the ladder's address known."""
        path = config.proxy_config_path()
        if path is None:
            return
        config.validate_config_file(path)
        missing = [
            name for name, value in ((config.URL_ENV, self.url), (config.TOKEN_ENV, self.token)) if not value
        ]
        if missing and self._given_client is None:
            raise LadderConfigError(
                f"the ladder's proxy hook needs {' and '.join(missing)} in the environment"
            )

    # --- what it works with -----------------------------------------------------------------

    def _make_client(self) -> AsyncLadderClient:
        if not self.url or not self.token:
            raise LadderError(
                f"{config.URL_ENV} and {config.TOKEN_ENV} must name the ladder and a gateway token",
                code="ladder_not_configured",
            )
        return AsyncLadderClient(
            self.url,
            self.token,
            timeout_s=self.timeout_s,
            cache_ttl_s=self.cache_ttl_s,
            transport=_ladder_transport(),
        )

    @property
    def client(self) -> AsyncLadderClient:
        """The client for the running event loop (see ``PerLoop``)."""
        return self.loops.client

    def _router(self) -> Any:
        if self.router is not None:
            return self.router
        return getattr(sys.modules.get("litellm.proxy.proxy_server"), "llm_router", None)

    def _check_router(self, router: Any) -> None:
        """LadderConfigError while the live router holds what would let auto/* escape the ladder."""
        if self._checked_router != id(router):
            self._router_problems = config.config_problems(config.router_config(router))
            self._checked_router = id(router)
            for problem in self._router_problems:
                logger.error("ladder: %s", problem)
        if self._router_problems:
            raise LadderConfigError("; ".join(self._router_problems))

    def _candidates(self, model: str, deployments: Sequence[Mapping[str, Any]]) -> tuple[Candidate, ...]:
        """The group's candidates for the ladder, read again only when its deployments changed: LiteLLM
        replaces a deployment it updates (``upsert_deployment`` removes it and adds the new one), so
        the same objects in the same order are the same group. Reading 50 deployments cost 0.2 ms of
        the proxy's one loop per request (``make bench-gateway``); comparing them, 2 µs."""
        cached = self._groups.get(model)
        if (
            cached is not None
            and len(cached[0]) == len(deployments)
            and all(map(operator.is_, cached[0], deployments))
        ):
            return cached[1]
        candidates, _ = ladder_candidates(model, deployments)
        self._groups.keep(model, (tuple(deployments), candidates))
        return candidates

    # --- before the router ------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        model = data.get("model")
        if not isinstance(model, str) or not is_auto_id(model):
            return data
        # Whatever happens next, no LiteLLM fallback serves an auto/* request.
        for name in config.FALLBACK_SETTINGS:
            data.pop(name, None)
        data["disable_fallbacks"] = True
        router = self._router()
        if router is None:
            return data  # no router (a bare proxy): LiteLLM answers for the unknown model
        try:
            self._check_router(router)
            deployments = group_deployments(router, model)
            if not deployments:
                return data  # LiteLLM answers its own "no such model"
            candidates = self._candidates(model, deployments)
        except LadderConfigError as exc:
            raise routing.refusal(
                503, {"message": str(exc), "code": "config_error", "auto_id": model}, None
            ) from exc
        try:
            resolution = await self.client.resolve(model, candidates)
        except Exception as exc:  # whatever kept the answer away: refuse, never guess
            detail = {
                "message": f"{model}: the ladder could not be asked: {exc}",
                "code": "ladder_unavailable",
                "ladder_code": getattr(exc, "code", type(exc).__name__),
                "auto_id": model,
            }
            retry_after_s = getattr(exc, "retry_after_s", None) or UNREACHABLE_RETRY_AFTER_S
            raise routing.refusal(503, detail, retry_after_s) from exc
        if not resolution.pool:
            raise routing.empty_pool_refusal(
                LadderPoolEmpty(model, resolution.empty, resolution), datetime.now(UTC)
            )
        buckets = metadata_buckets(data) or [data.setdefault("metadata", {})]
        request_id = uuid.uuid4().hex
        pool = routing.pool_document(resolution)
        self._pools.keep(request_id, pool)
        for bucket in buckets:
            bucket[routing.POOL_KEY] = pool
            bucket[routing.REQUEST_KEY] = request_id
        return data

    # --- each attempt -----------------------------------------------------------------------

    async def async_filter_deployments(
        self,
        model: str,
        healthy_deployments: list[Any],
        messages: Any,
        request_kwargs: dict[str, Any] | None = None,
        parent_otel_span: Any = None,
    ) -> list[Any]:
        if not is_auto_id(model):
            return healthy_deployments
        request_id = str(from_metadata(request_kwargs, routing.REQUEST_KEY))
        pool = self._pools.get(request_id)
        if pool is None:
            # Not through the pre-call hook (a route that skips it): ask now, fail closed.
            pool = await self._pool_for(model, healthy_deployments)
        failed = self._failed.get(request_id, set()) | routing.skipped_by_litellm(request_kwargs)
        return [
            await self._with_credential(d) for d in routing.first_allowed(pool, healthy_deployments, failed)
        ]

    async def _pool_for(self, model: str, healthy_deployments: Sequence[Any]) -> routing.Pool:
        router = self._router()
        listed = group_deployments(router, model) if router is not None else []
        deployments = listed or [d for d in healthy_deployments if isinstance(d, Mapping)]
        candidates = self._candidates(model, deployments)
        resolution = await self.client.resolve(model, candidates)
        if not resolution.pool:
            raise LadderPoolEmpty(model, resolution.empty, resolution)
        return routing.pool_document(resolution)

    async def _with_credential(self, deployment: Mapping[str, Any]) -> Any:
        try:
            return await self.credentials.lend(deployment)
        except LadderError as exc:
            connection_id = borrows_credential(deployment)
            raise routing.refusal(
                503,
                {"message": f"{connection_id}: the ladder lent no credential: {exc}", "code": exc.code},
                exc.retry_after_s or UNREACHABLE_RETRY_AFTER_S,
            ) from exc

    # --- outcomes ---------------------------------------------------------------------------

    def _failure_report(self, kwargs: Mapping[str, Any], answered: datetime) -> dict[str, Any] | None:
        exc = kwargs.get("exception")
        if isinstance(exc, BaseException) and not isinstance(exc, LadderRoutingError):
            self._remember_failed(kwargs)  # a timeout too: the retry climbs past this deployment
        report = super()._failure_report(kwargs, answered)
        if report is not None and report["status"] == 401:
            self.credentials.forget(report["connection_id"])  # the next attempt borrows a fresh token
        return report

    def _remember_failed(self, kwargs: Mapping[str, Any]) -> None:
        params = kwargs.get("litellm_params")
        request_id = from_metadata(params if isinstance(params, Mapping) else None, routing.REQUEST_KEY)
        deployment_id = answering_model_info(kwargs).get("id")
        if request_id is None or deployment_id is None or answering_connection(kwargs) is None:
            return
        failed = self._failed.get(str(request_id)) or set()
        failed.add(str(deployment_id))
        self._failed.keep(str(request_id), failed)

    async def aclose(self) -> None:
        """Flush what is queued and close the client (the proxy's shutdown, or a test's end)."""
        await self.loops.aclose()

    def _drain_at_exit(self) -> None:
        if self.url and self.token:
            url, token = self.url, self.token
            self.loops.drain_sync(lambda: LadderClient(url, token))


def _ladder_transport() -> httpx.AsyncBaseTransport | None:
    """aiohttp under httpx (``ladder_client.aiohttp_transport``) when ``httpx-aiohttp`` is installed,
    as the docs' proxy environment has it; else None (httpx's own: the same calls, more CPU per
    call), with a warning, so that a proxy environment made before it keeps starting."""
    try:
        from ladder_client.aiohttp_transport import aiohttp_transport
    except ImportError as exc:
        logger.warning(
            "ladder: %s; the hook calls the ladder over httpx's own transport (install httpx-aiohttp "
            "in the proxy's environment: about 0.5 ms less CPU per call)",
            exc,
        )
        return None
    return aiohttp_transport(DEFAULT_MAX_CONNECTIONS)


def flush_at_proxy_shutdown(hook: LadderProxyHook) -> bool:
    """Send what ``hook`` still queues when the proxy shuts down. LiteLLM has no shutdown hook for
    a callback, and uvicorn re-raises SIGTERM after its graceful shutdown, so ``atexit`` never runs
    under the proxy: the last usage reports were lost. The proxy's lifespan awaits its module-level
    ``proxy_shutdown_event`` by name (1.108.7 and 1.110.x), so a wrapper set there flushes first.
    False (and ``atexit`` alone) when the proxy's module is not loaded or has no such function."""
    server = sys.modules.get("litellm.proxy.proxy_server")
    original = getattr(server, "proxy_shutdown_event", None)
    if server is None or original is None:
        return False
    if getattr(original, "ladder_flushes", None) is not None:
        original.ladder_flushes.append(hook)
        return True
    hooks = [hook]

    async def proxy_shutdown_event(*args: Any, **kwargs: Any) -> Any:
        for each in hooks:
            try:
                await each.aclose()
            except Exception:  # the proxy's own shutdown must go on
                logger.exception("ladder: flushing the hook's reports at the proxy's shutdown failed")
        return await original(*args, **kwargs)

    proxy_shutdown_event.ladder_flushes = hooks  # type: ignore[attr-defined]
    server.proxy_shutdown_event = proxy_shutdown_event  # type: ignore[attr-defined]
    return True


def _make_instance() -> LadderProxyHook:
    hook = LadderProxyHook.from_environment()
    hook.check_start_up()
    flush_at_proxy_shutdown(hook)
    atexit.register(hook._drain_at_exit)  # outside the proxy (a script importing the hook)
    return hook


proxy_handler_instance = _make_instance()
