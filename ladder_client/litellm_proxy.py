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
- ``async_filter_deployments`` (every attempt, after LiteLLM's cooldown filter): narrows the
  attempt to the deployments of the first allowed connection of the first pool entry that still
  has one (the order the ladder gave, as the Router integration picks), leaving out those that
  already failed in this request, so that a retry after a 429 climbs exactly one rung. A request
  that did not pass the pre-call hook is resolved here (an empty pool raises ``LadderPoolEmpty``,
  which LiteLLM does not retry).
- ``async_log_failure_event``: an upstream error answer is reported at once and awaited (LiteLLM
  awaits the hook before it retries), so the ladder has heard it before the retry is routed.
- ``async_log_success_event``: usage is queued and sent in batches; quota headers are coalesced
  per connection (``ladder_client.reporting``).

The refusals are ``fastapi.HTTPException`` (the proxy turns it into its error answer keeping the
status and headers; LiteLLM's proxy always has fastapi); without fastapi, an exception carrying
the same ``status_code``, ``detail`` and ``headers``.

Start-up check: when the proxy loads this module (``get_instance_fn``, while it reads the config),
the config file it is reading (``litellm.proxy.proxy_server.user_config_file_path``, or
``LADDER_PROXY_CONFIG``) is checked with ``validate_proxy_config``; a problem raises
``LadderConfigError`` naming the entry, and the proxy does not start. The live router is checked
again at the first ``auto/*`` request (a config kept in the proxy's database, say): then every
``auto/*`` request is refused with 503 ``config_error`` until it is fixed.

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
import math
import operator
import os
import sys
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from litellm.integrations.custom_logger import CustomLogger

from ladder_client.aclient import DEFAULT_MAX_CONNECTIONS, AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.core import DEFAULT_TIMEOUT_S
from ladder_client.errors import LadderError
from ladder_client.litellm_router import (
    BORROW_KEY,
    CONNECTION_KEY,
    METADATA_BUCKETS,
    MODEL_KEY,
    PROVIDER_KEY,
    LadderConfigError,
    LadderPoolEmpty,
    LadderRoutingError,
    _failure_details,
    _ladder_info,
    _ladder_target,
    _model_info,
    _quota_headers,
    _success_headers,
    answered_at,
    borrows_credential,
    group_deployments,
    is_auto_id,
    ladder_candidates,
    reportable_failure,
    usage_event,
    with_api_key,
)
from ladder_client.reporting import CredentialCache, LadderReporter, PerLoop, SeenOnce, sync_drain_at_exit
from ladder_client.types import Candidate, Resolution

logger = logging.getLogger(__name__)

URL_ENV = "LADDER_URL"
TOKEN_ENV = "LADDER_TOKEN"
CACHE_ENV = "LADDER_RESOLVE_CACHE_S"
TIMEOUT_ENV = "LADDER_TIMEOUT_S"
FLUSH_ENV = "LADDER_FLUSH_INTERVAL_S"  # how often queued usage leaves (ladder_client.reporting)
CONFIG_ENV = "LADDER_PROXY_CONFIG"

POOL_KEY = "ladder_pool"  # in the request's metadata: [[provider, model, [connection ids]], ...]
REQUEST_KEY = "ladder_request_id"  # in the request's metadata: one id per client request
FALLBACK_SETTINGS = ("fallbacks", "default_fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
CONFIG_SECTIONS = ("router_settings", "litellm_settings")
# What LiteLLM's retry loop says already failed in this request (when the release passes it).
LITELLM_SKIPPED_KEYS = ("_retry_skipped_deployment_ids", "_excluded_deployment_ids")
UNREACHABLE_RETRY_AFTER_S = 5
FAILED_REQUESTS_KEPT = 4096
# Auto groups whose candidates are kept: a wildcard deployment (auto/*) makes a group of each name a
# client sends, and LiteLLM hands copies for those (never the same objects: each is read anew).
GROUPS_KEPT = 64


# --- start-up validation -------------------------------------------------------------------


def _auto_groups(model_list: object) -> list[str]:
    groups: list[str] = []
    for deployment in model_list if isinstance(model_list, list) else ():
        name = deployment.get("model_name") if isinstance(deployment, Mapping) else None
        if isinstance(name, str) and is_auto_id(name) and name not in groups:
            groups.append(name)
    return groups


def _fallback_problems(where: str, value: object, auto_groups: Sequence[str]) -> list[str]:
    """A fallback setting that could send an ``auto/*`` request to another model group."""
    if not value:
        return []
    if where.endswith(".default_fallbacks"):
        if auto_groups:
            return [
                f"{where}: {value!r} would serve every model group that fails, "
                f"auto groups {list(auto_groups)} included; only the ladder chooses where auto/* goes"
            ]
        return []
    if not isinstance(value, list):
        return [f"{where}: expected a list of {{model group: [fallback groups]}}, got {value!r}"]
    problems = []
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            problems.append(f"{where}[{index}]: expected {{model group: [fallback groups]}}, got {entry!r}")
            continue
        for source, targets in entry.items():
            leads_auto = (isinstance(source, str) and is_auto_id(source)) or (source == "*" and auto_groups)
            if leads_auto:
                problems.append(
                    f"{where}[{index}]: {source!r} → {targets!r} leads an auto/* group "
                    f"{'(' + ', '.join(auto_groups) + ') ' if source == '*' else ''}to another group; "
                    "only the ladder chooses where auto/* requests go (remove the entry)"
                )
    return problems


def config_problems(config: Mapping[str, Any]) -> list[str]:
    """Every reason the proxy config (``config.yaml`` parsed) cannot run with the ladder, each
    naming its entry; empty when it can."""
    model_list = config.get("model_list") or []
    problems: list[str] = []
    auto_groups = _auto_groups(model_list)
    for index, deployment in enumerate(model_list if isinstance(model_list, list) else ()):
        if not isinstance(deployment, Mapping):
            continue
        group = deployment.get("model_name")
        if not isinstance(group, str) or not is_auto_id(group):
            continue
        try:
            ladder_candidates(group, [deployment])
        except LadderConfigError as exc:
            problems.append(f"model_list[{index}]: {exc}")
    for section in CONFIG_SECTIONS:
        settings = config.get(section)
        if not isinstance(settings, Mapping):
            continue
        for name in FALLBACK_SETTINGS:
            problems.extend(_fallback_problems(f"{section}.{name}", settings.get(name), auto_groups))
    return problems


def validate_proxy_config(config: Mapping[str, Any]) -> None:
    """Refuse a config that would let an ``auto/*`` request escape the ladder (LadderConfigError)."""
    problems = config_problems(config)
    if problems:
        raise LadderConfigError(
            "the LiteLLM proxy config cannot run with the ladder:\n  - " + "\n  - ".join(problems)
        )


def validate_config_file(path: str) -> None:
    import yaml  # the proxy's own dependency

    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    if not isinstance(config, Mapping):
        raise LadderConfigError(f"{path}: not a YAML mapping")
    validate_proxy_config(config)


def router_config(router: Any) -> dict[str, Any]:
    """What a running router holds, in the config's shape (for ``config_problems``)."""
    settings_of = getattr(router, "settings", None)
    source = settings_of() if callable(settings_of) else router
    registry = getattr(router, "registry", None)
    model_list = (
        list(registry().all()) if callable(registry) else list(getattr(router, "model_list", []) or [])
    )
    return {
        "model_list": model_list,
        "router_settings": {
            name: getattr(source, name, None) for name in FALLBACK_SETTINGS if name != "default_fallbacks"
        },
    }


def _proxy_config_path() -> str | None:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return explicit
    proxy_server = sys.modules.get("litellm.proxy.proxy_server")
    path = getattr(proxy_server, "user_config_file_path", None) if proxy_server is not None else None
    return path if isinstance(path, str) and path else None


def _env_seconds(name: str, default: float, *, zero_allowed: bool) -> float:
    """A number of seconds from the environment; a bad one stops the proxy naming the variable."""
    text = (os.environ.get(name) or "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        least = "0 (off) or more" if zero_allowed else "more than 0"
        raise LadderConfigError(f"{name} must be a number of seconds, {least}; got {text[:40]!r}")
    return value


# --- refusals ------------------------------------------------------------------------------


class LadderRefusal(Exception):
    """A refusal where fastapi is missing: the attributes the proxy reads off an HTTPException."""

    def __init__(self, status_code: int, detail: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(detail.get("message", ""))
        self.status_code = status_code
        self.detail = detail
        self.headers = headers


def refusal(status_code: int, detail: dict[str, Any], retry_after_s: float | None) -> Exception:
    headers = {} if retry_after_s is None else {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
    try:
        from fastapi import HTTPException  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return LadderRefusal(status_code, detail, headers)
    return HTTPException(status_code=status_code, detail=detail, headers=headers)


def empty_pool_refusal(auto_id: str, resolution: Resolution, now: datetime) -> Exception:
    empty = resolution.empty
    code = empty.code if empty is not None else "empty_pool"
    retry_at = empty.retry_at if empty is not None else None
    detail = {
        "message": f"{auto_id}: no pool ({code}): "
        + (empty.message if empty is not None else "the ladder returned an empty pool"),
        "code": code,
        "auto_id": auto_id,
        "retry_at": retry_at.isoformat() if retry_at is not None else None,
        "reasons": [
            {
                "provider": excluded.provider,
                "model": excluded.model,
                "connection_id": excluded.connection_id,
                "reason": excluded.reason,
                "detail": excluded.detail,
            }
            for excluded in resolution.excluded
        ],
    }
    if retry_at is None:
        return refusal(503, detail, None)
    return refusal(429, detail, (retry_at - now).total_seconds())


# --- the request's metadata ----------------------------------------------------------------


def _metadata_buckets(data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [bucket for name in METADATA_BUCKETS if isinstance(bucket := (data or {}).get(name), dict)]


def _from_metadata(data: Mapping[str, Any] | None, key: str) -> Any:
    for bucket in _metadata_buckets(data):
        if key in bucket:
            return bucket[key]
    return None


def _deployment_id(deployment: Mapping[str, Any]) -> str | None:
    ident = _ladder_info(deployment).get("id")
    return str(ident) if ident is not None else None


def _pool_document(resolution: Resolution) -> list[list[Any]]:
    return [[entry.provider, entry.model, list(entry.allowed_connection_ids)] for entry in resolution.pool]


def _target(deployment: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(provider, model, connection id) of a ladder deployment; None for another. Runs for every
    deployment of every attempt (``make bench-gateway``): plain lookups, no generic helper."""
    info = deployment.get("model_info")
    if not isinstance(info, dict | Mapping):
        return None
    connection_id, provider, model = info.get(CONNECTION_KEY), info.get(PROVIDER_KEY), info.get(MODEL_KEY)
    if (
        isinstance(connection_id, str)
        and connection_id
        and isinstance(provider, str)
        and provider
        and isinstance(model, str)
        and model
    ):
        return provider, model, connection_id
    return None


# --- the hook ------------------------------------------------------------------------------


class LadderProxyHook(CustomLogger):
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
        super().__init__()
        self.url = url
        self.token = token
        self.cache_ttl_s = cache_ttl_s
        self.timeout_s = timeout_s
        self.router = router
        self._given_client = client
        self._loops = PerLoop(self._make_client, client=client, reporter_options=reporter_options)
        self._credentials: CredentialCache | None = None
        self._failed: OrderedDict[str, set[str]] = OrderedDict()
        # The pools the pre-call hook resolved, by request id: the filter trusts only these, never a
        # ``ladder_pool`` that the client wrote into its own metadata.
        self._pools: OrderedDict[str, list[list[Any]]] = OrderedDict()
        self._seen = SeenOnce()
        # Each auto group's candidates, with the deployments they were read from (see _candidates).
        self._groups: OrderedDict[str, tuple[tuple[Any, ...], tuple[Candidate, ...]]] = OrderedDict()
        self._checked_router: int | None = None
        self._router_problems: list[str] = []

    @classmethod
    def from_environment(cls) -> LadderProxyHook:
        cache_ttl_s = _env_seconds(CACHE_ENV, 0.0, zero_allowed=True)
        timeout_s = _env_seconds(TIMEOUT_ENV, DEFAULT_TIMEOUT_S, zero_allowed=False)
        flush = _env_seconds(FLUSH_ENV, 0.0, zero_allowed=False)  # unset: the reporter's default
        return cls(
            url=os.environ.get(URL_ENV),
            token=os.environ.get(TOKEN_ENV),
            cache_ttl_s=cache_ttl_s,
            timeout_s=timeout_s,
            reporter_options={"flush_interval_s": flush} if flush else None,
        )

    def check_start_up(self) -> None:
        """At proxy start-up: the config file checked, and the ladder's address known."""
        path = _proxy_config_path()
        if path is None:
            return
        validate_config_file(path)
        missing = [name for name, value in ((URL_ENV, self.url), (TOKEN_ENV, self.token)) if not value]
        if missing and self._given_client is None:
            raise LadderConfigError(
                f"the ladder's proxy hook needs {' and '.join(missing)} in the environment"
            )

    # --- what it works with -----------------------------------------------------------------

    def _make_client(self) -> AsyncLadderClient:
        if not self.url or not self.token:
            raise LadderError(
                f"{URL_ENV} and {TOKEN_ENV} must name the ladder and a gateway token",
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
        return self._loops.client

    @property
    def reporter(self) -> LadderReporter:
        return self._loops.reporter

    @property
    def credentials(self) -> CredentialCache:
        if self._credentials is None:
            self._credentials = CredentialCache(lambda connection_id: self.client.credential(connection_id))
        return self._credentials

    def _router(self) -> Any:
        if self.router is not None:
            return self.router
        proxy_server = sys.modules.get("litellm.proxy.proxy_server")
        return getattr(proxy_server, "llm_router", None) if proxy_server is not None else None

    def _check_router(self, router: Any) -> list[str]:
        if self._checked_router != id(router):
            self._router_problems = config_problems(router_config(router))
            self._checked_router = id(router)
            for problem in self._router_problems:
                logger.error("ladder: %s", problem)
        return self._router_problems

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
        _remember(self._groups, model, (tuple(deployments), candidates), GROUPS_KEPT)
        return candidates

    # --- before the router ------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        model = data.get("model")
        if not isinstance(model, str) or not is_auto_id(model):
            return data
        # Whatever happens next, no LiteLLM fallback serves an auto/* request.
        for name in FALLBACK_SETTINGS:
            data.pop(name, None)
        data["disable_fallbacks"] = True
        router = self._router()
        if router is None:
            return data  # no router (a bare proxy): LiteLLM answers for the unknown model
        problems = self._check_router(router)
        if problems:
            raise refusal(
                503, {"message": "; ".join(problems), "code": "config_error", "auto_id": model}, None
            )
        deployments = group_deployments(router, model)
        if not deployments:
            return data  # LiteLLM answers its own "no such model"
        try:
            candidates = self._candidates(model, deployments)
        except LadderConfigError as exc:
            raise refusal(503, {"message": str(exc), "code": "config_error", "auto_id": model}, None) from exc
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
            raise refusal(503, detail, retry_after_s) from exc
        if not resolution.pool:
            raise empty_pool_refusal(model, resolution, datetime.now(UTC))
        buckets = _metadata_buckets(data) or [data.setdefault("metadata", {})]
        request_id = uuid.uuid4().hex
        pool = _pool_document(resolution)
        _remember(self._pools, request_id, pool)
        for bucket in buckets:
            bucket[POOL_KEY] = pool
            bucket[REQUEST_KEY] = request_id
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
        pool = self._pools.get(str(_from_metadata(request_kwargs, REQUEST_KEY)))
        if pool is None:
            # Not through the pre-call hook (a route that skips it): ask now, fail closed.
            pool = await self._pool_for(model, healthy_deployments)
        failed = set(self._failed.get(str(_from_metadata(request_kwargs, REQUEST_KEY)), ()))
        for key in LITELLM_SKIPPED_KEYS:
            skipped = (request_kwargs or {}).get(key)
            if isinstance(skipped, list | tuple):
                failed.update(str(ident) for ident in skipped)
        for provider, ladder_model, connection_ids in pool:
            # The first allowed connection only, as the Router integration picks: plans are spent
            # in the ladder's order, and its quota headers coalesce (one connection's reports at
            # most once a second) instead of each request landing on another plan.
            rank: dict[str, int] = {}
            for index, connection in enumerate(connection_ids):
                rank.setdefault(connection, index)
            best, chosen = len(rank), list[Any]()
            for deployment in healthy_deployments:
                target = _target(deployment) if isinstance(deployment, Mapping) else None
                if target is None or target[0] != provider or target[1] != ladder_model:
                    continue
                place = rank.get(target[2], best + 1)
                if place > best or _deployment_id(deployment) in failed:
                    continue
                if place < best:
                    best, chosen = place, list[Any]()
                chosen.append(deployment)
            if chosen:
                return [await self._with_credential(deployment) for deployment in chosen]
        return []

    async def _pool_for(self, model: str, healthy_deployments: Sequence[Any]) -> list[list[Any]]:
        router = self._router()
        listed = group_deployments(router, model) if router is not None else []
        deployments = listed or [d for d in healthy_deployments if isinstance(d, Mapping)]
        candidates = self._candidates(model, deployments)
        resolution = await self.client.resolve(model, candidates)
        if not resolution.pool:
            raise LadderPoolEmpty(model, resolution.empty, resolution)
        return _pool_document(resolution)

    async def _with_credential(self, deployment: Mapping[str, Any]) -> Any:
        connection_id = borrows_credential(deployment)
        if connection_id is None:
            return deployment
        try:
            api_key = await self.credentials.token(connection_id)
        except LadderError as exc:
            raise refusal(
                503,
                {"message": f"{connection_id}: the ladder lent no credential: {exc}", "code": exc.code},
                exc.retry_after_s or UNREACHABLE_RETRY_AFTER_S,
            ) from exc
        return with_api_key(deployment, api_key)

    # --- outcomes ---------------------------------------------------------------------------

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            await self.report_failure(kwargs if isinstance(kwargs, Mapping) else {}, answered_at(end_time))
        except Exception as exc:  # the request must never fail for want of a report
            logger.warning("could not report the failure to the ladder: %s", exc, exc_info=True)

    async def report_failure(self, kwargs: Mapping[str, Any], answered: datetime) -> None:
        exc = kwargs.get("exception")
        if _ladder_target(kwargs) is None or not isinstance(exc, BaseException):
            return
        if isinstance(exc, LadderRoutingError):
            return
        self._remember_failed(kwargs)  # a timeout too: the retry climbs past this deployment
        failure = reportable_failure(kwargs)
        if failure is None or not self._seen.first(exc):
            return
        connection_id, model, status, _ = failure
        if status == 401:
            self.credentials.forget(connection_id)
        headers, body = _failure_details(exc)
        await self.reporter.report_failure(
            connection_id, status, headers=headers, body=body, model=model, observed_at=answered
        )

    def _remember_failed(self, kwargs: Mapping[str, Any]) -> None:
        params = kwargs.get("litellm_params")
        request_id = _from_metadata(params if isinstance(params, Mapping) else None, REQUEST_KEY)
        deployment_id = _model_info(kwargs).get("id")
        if request_id is None or deployment_id is None:
            return
        failed = self._failed.get(str(request_id)) or set()
        failed.add(str(deployment_id))
        _remember(self._failed, str(request_id), failed)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            self.report_success(
                kwargs if isinstance(kwargs, Mapping) else {}, response_obj, answered_at(end_time)
            )
        except Exception as exc:
            logger.warning("could not queue the usage for the ladder: %s", exc, exc_info=True)

    def report_success(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        event = usage_event(kwargs, response_obj, answered)
        if event is None:
            return
        self.reporter.offer_usage(event)
        headers = _quota_headers(_success_headers(kwargs, response_obj))
        if headers:
            self.reporter.offer_headers(event.connection_id, headers, answered)

    async def aclose(self) -> None:
        """Flush what is queued and close the client (the proxy's shutdown, or a test's end)."""
        await self._loops.aclose()

    def _drain_at_exit(self) -> None:
        reporter = self._loops.current_reporter
        if reporter is None or not reporter.queue_length or not self.url or not self.token:
            return
        sync_drain_at_exit(reporter, lambda: LadderClient(self.url or "", self.token or ""))()


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


def _remember(kept: OrderedDict[str, Any], key: str, value: Any, limit: int = FAILED_REQUESTS_KEPT) -> None:
    """Keep ``value`` under ``key`` among the last ``limit`` keys' (an evicted pool is resolved again
    by the filter: fail closed; evicted candidates are read again from the deployments)."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > limit:
        kept.popitem(last=False)


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


__all__ = [
    "BORROW_KEY",
    "POOL_KEY",
    "PROVIDER_KEY",
    "REQUEST_KEY",
    "LadderProxyHook",
    "LadderRefusal",
    "config_problems",
    "proxy_handler_instance",
    "refusal",
    "usage_event",
    "validate_config_file",
    "validate_proxy_config",
]

proxy_handler_instance = _make_instance()
