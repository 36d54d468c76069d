"""The ladder inside LiteLLM's Router: a custom routing strategy and a callback (docs/LITELLM.md).

- ``LadderRoutingStrategy`` answers every pick of an ``auto/*`` model group by asking the ladder
  for that auto id's pool, with the group's deployments as candidates, and returns the first
  deployment of the first pool entry. An empty pool raises ``LadderPoolEmpty``; a LiteLLM fallback
  away from an ``auto/*`` group raises ``LadderFallbackRefused``: never a silent paid call.
- ``LadderCallback`` reports each success's usage (and the upstream's rate-limit headers) and each
  upstream error answer back to the ladder, for the deployment's ladder connection. It never
  raises into the caller's request.

Each deployment of an ``auto/*`` group names its ladder connection and what the ladder calls its
provider and model, in ``model_info``::

    {"model_name": "auto/thrifty",
     "litellm_params": {"model": "anthropic/claude-sonnet-4-5", ...},
     "model_info": {"ladder_connection_id": "claude-max", "ladder_provider": "claude",
                    "ladder_model": "claude-sonnet-4-5"}}

This is the only module of ``ladder_client`` that imports LiteLLM (``pip install .[litellm]``).
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from litellm import Router
from litellm.integrations.custom_logger import CustomLogger
from litellm.types.router import CustomRoutingStrategyBase

from ladder_client.aclient import AsyncLadderClient
from ladder_client.client import LadderClient
from ladder_client.reporting import CredentialCache, PerLoop, SeenOnce
from ladder_client.types import Candidate, EmptyPool, Resolution, UsageEvent

logger = logging.getLogger(__name__)

AUTO_PREFIX = "auto/"
CONNECTION_KEY = "ladder_connection_id"
PROVIDER_KEY = "ladder_provider"
MODEL_KEY = "ladder_model"
LADDER_KEYS = (CONNECTION_KEY, PROVIDER_KEY, MODEL_KEY)
# Where LiteLLM keeps the request's metadata: `metadata` for completions, `litellm_metadata` for
# the newer endpoints. A fallback hop carries the group the request was first made for there.
METADATA_BUCKETS = ("metadata", "litellm_metadata")
# Response headers worth sending to the ladder: its adapters read rate-limit and quota headers
# (anthropic-ratelimit-unified-*, x-codex-*, x-ratelimit-*); anything else is noise.
QUOTA_HEADER_MARKERS = ("limit", "quota", "codex", "reset", "retry-after", "usage")
REPORTED_FAILURES_KEPT = 512
BORROW_KEY = "ladder_borrow_credential"  # in a deployment's model_info: take its key from the ladder


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


def _ladder_info(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    info = deployment.get("model_info")
    return info if isinstance(info, Mapping) else {}


def _describe(deployment: Mapping[str, Any]) -> str:
    params = deployment.get("litellm_params")
    model = params.get("model") if isinstance(params, Mapping) else None
    return f"deployment {_ladder_info(deployment).get('id') or model or '?'!r}"


def ladder_candidates(
    model_group: str, deployments: Sequence[Mapping[str, Any]]
) -> tuple[tuple[Candidate, ...], dict[tuple[str, str, str], Mapping[str, Any]]]:
    """One logical candidate per (ladder provider, ladder model), its connections in deployment
    order, and the deployment serving each (provider, model, connection): the first one listed."""
    allowed: dict[tuple[str, str], list[str]] = {}
    targets: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for deployment in deployments:
        info = _ladder_info(deployment)
        values = [info.get(key) for key in LADDER_KEYS]
        missing = [
            key
            for key, value in zip(LADDER_KEYS, values, strict=True)
            if not isinstance(value, str) or not value
        ]
        if missing:
            raise LadderConfigError(
                f"{model_group}: {_describe(deployment)} needs model_info {', '.join(missing)} "
                "(strings) so that the ladder can route it"
            )
        connection_id, provider, model = (str(value) for value in values)
        connections = allowed.setdefault((provider, model), [])
        if connection_id not in connections:
            connections.append(connection_id)
        targets.setdefault((provider, model, connection_id), deployment)
    candidates = tuple(
        Candidate(provider=provider, model=model, connection_id=None, allowed_connection_ids=tuple(ids))
        for (provider, model), ids in allowed.items()
    )
    return candidates, targets


def original_model_group(request_kwargs: Mapping[str, Any] | None) -> str | None:
    """The group a request was first made for (LiteLLM stamps it before any fallback hop)."""
    for bucket in METADATA_BUCKETS:
        metadata = (request_kwargs or {}).get(bucket)
        if isinstance(metadata, Mapping):
            group = metadata.get("original_model_group")
            if isinstance(group, str) and group:
                return group
    return None


def group_deployments(router: Any, model_group: str) -> list[Mapping[str, Any]]:
    """The deployments of a model group, as the router lists them."""
    registry = getattr(router, "registry", None)
    if callable(registry):
        found = registry().deployments(model_group)
    else:  # LiteLLM releases before the registry view
        found = router.get_model_list(model_name=model_group)
    return [deployment for deployment in found or () if isinstance(deployment, Mapping)]


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

    def __init__(self, router: Router, client: LadderClient, *, loops: PerLoop | None = None) -> None:
        self.router = router
        self.client = client
        self.loops = loops or PerLoop(partial(client.twin, AsyncLadderClient))
        self.credentials = CredentialCache(lambda connection_id: self.loops.client.credential(connection_id))

    def deployments(self, model_group: str) -> list[Mapping[str, Any]]:
        return group_deployments(self.router, model_group)

    def _candidates(
        self, model_group: str, request_kwargs: Mapping[str, Any] | None
    ) -> tuple[list[Mapping[str, Any]], tuple[Candidate, ...], dict[tuple[str, str, str], Mapping[str, Any]]]:
        origin = original_model_group(request_kwargs)
        if origin is not None and origin != model_group and is_auto_id(origin):
            raise LadderFallbackRefused(origin, model_group)
        deployments = self.deployments(model_group)
        if not deployments:
            raise LadderConfigError(f"the router has no deployment in model group {model_group!r}")
        if not is_auto_id(model_group):
            return deployments, (), {}
        candidates, targets = ladder_candidates(model_group, deployments)
        return deployments, candidates, targets

    @staticmethod
    def _choose(
        model_group: str, resolution: Resolution, targets: Mapping[tuple[str, str, str], Mapping[str, Any]]
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

    def pick(self, model_group: str, request_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The deployment for one attempt of a request for ``model_group`` (synchronous)."""
        deployments, candidates, targets = self._candidates(model_group, request_kwargs)
        if not is_auto_id(model_group):
            return dict(deployments[0])
        chosen = self._choose(model_group, self.client.resolve(model_group, candidates), targets)
        connection_id = borrows_credential(chosen)
        if connection_id is None:
            return chosen
        token = self.credentials.fresh(connection_id)
        if token is None:
            credential = self.client.credential(connection_id)
            self.credentials.remember(connection_id, credential)
            token = credential.access_token
        return with_api_key(chosen, token)

    async def apick(
        self, model_group: str, request_kwargs: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The deployment for one attempt, from the event loop."""
        deployments, candidates, targets = self._candidates(model_group, request_kwargs)
        if not is_auto_id(model_group):
            return dict(deployments[0])
        resolution = await self.loops.client.resolve(model_group, candidates)
        chosen = self._choose(model_group, resolution, targets)
        connection_id = borrows_credential(chosen)
        if connection_id is None:
            return chosen
        return with_api_key(chosen, await self.credentials.token(connection_id))

    # LiteLLM's base declares these `-> None` but documents "returns an element of model_list".
    def get_available_deployment(  # type: ignore[override]
        self,
        model: str,
        messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None,
        specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> dict[str, Any]:
        return self.pick(model, request_kwargs)

    async def async_get_available_deployment(  # type: ignore[override]
        self,
        model: str,
        messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None,
        specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> dict[str, Any]:
        return await self.apick(model, request_kwargs)


def borrows_credential(deployment: Mapping[str, Any]) -> str | None:
    """The connection whose lent token a deployment uses as its key; None when it has its own."""
    info = _ladder_info(deployment)
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


# --- the callback -----------------------------------------------------------------------------


def _model_info(kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    params = kwargs.get("litellm_params")
    if isinstance(params, Mapping):
        info = params.get("model_info")
        if isinstance(info, Mapping):
            return info
        metadata = params.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("model_info"), Mapping):
            return metadata["model_info"]
    return {}


def _ladder_target(kwargs: Mapping[str, Any]) -> tuple[str, str] | None:
    """(connection id, ladder model) of the deployment that answered; None if not the ladder's."""
    info = _model_info(kwargs)
    connection_id, model = info.get(CONNECTION_KEY), info.get(MODEL_KEY)
    if isinstance(connection_id, str) and connection_id and isinstance(model, str) and model:
        return connection_id, model
    return None


def answered_at(end_time: object) -> datetime:
    """When the upstream answered, in UTC. LiteLLM's times are naive local datetimes
    (``datetime.now()``): ``astimezone`` reads a naive one as local time, which it is."""
    if isinstance(end_time, datetime):
        return end_time.astimezone(UTC)
    return datetime.now(UTC)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _tokens(kwargs: Mapping[str, Any], response: object) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is not None:
        return _count(getattr(usage, "prompt_tokens", 0)), _count(getattr(usage, "completion_tokens", 0))
    payload = kwargs.get("standard_logging_object")
    if isinstance(payload, Mapping):
        return _count(payload.get("prompt_tokens")), _count(payload.get("completion_tokens"))
    return 0, 0


def _cost_usd(kwargs: Mapping[str, Any]) -> float | None:
    """LiteLLM's cost when it knows one. It answers 0.0 for a model missing from its price map, so a
    zero is not trusted: the ladder then prices the tokens from its own catalog."""
    cost = kwargs.get("response_cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        return float(cost)
    return None


def _as_headers(value: object) -> dict[str, str]:
    if value is None:
        return {}
    items = value.items() if hasattr(value, "items") else ()
    return {str(name): str(item) for name, item in items}


def _quota_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        name: value
        for name, value in headers.items()
        if any(marker in name.lower() for marker in QUOTA_HEADER_MARKERS)
    }


def _success_headers(kwargs: Mapping[str, Any], response: object) -> dict[str, str]:
    headers = _as_headers(kwargs.get("response_headers"))
    if headers:
        return headers
    # LiteLLM also keeps the upstream's headers on the response, prefixed "llm_provider-".
    hidden = getattr(response, "_hidden_params", None)
    additional = _as_headers(hidden.get("additional_headers") if isinstance(hidden, Mapping) else None)
    prefix = "llm_provider-"
    return {name[len(prefix) :]: value for name, value in additional.items() if name.startswith(prefix)}


def _upstream_status(exc: object) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        return status
    return None


def _upstream_headers(exc: BaseException) -> dict[str, str]:
    response = getattr(exc, "response", None)
    return _as_headers(getattr(response, "headers", None)) or _as_headers(
        getattr(exc, "litellm_response_headers", None)
    )


def _failure_details(exc: BaseException) -> tuple[dict[str, str], object]:
    """The upstream error answer's headers and body (JSON when it parses, else its text)."""
    response = getattr(exc, "response", None)
    headers = _upstream_headers(exc)
    text = None
    try:
        text = getattr(response, "text", None)
    except Exception:  # a streamed response that was never read has no text
        text = None
    if isinstance(text, str) and text:
        try:
            return headers, json.loads(text)
        except ValueError:
            return headers, text
    body = getattr(exc, "body", None)
    return headers, body if body is not None else str(exc)


def usage_event(kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> UsageEvent | None:
    """The usage a success of a ladder deployment reports: request_id = LiteLLM's call id, unique
    per call, so a replayed report is not counted twice. None for a cache hit (no upstream was
    used), another deployment, or a call without an id."""
    target = _ladder_target(kwargs)
    if target is None or kwargs.get("cache_hit") is True:
        return None
    connection_id, model = target
    request_id = kwargs.get("litellm_call_id") or getattr(response_obj, "id", None)
    if not isinstance(request_id, str) or not request_id:
        logger.warning("a success on %s has no call id: its usage is not reported", connection_id)
        return None
    input_tokens, output_tokens = _tokens(kwargs, response_obj)
    return UsageEvent(
        request_id=f"litellm:{request_id}",
        connection_id=connection_id,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=_cost_usd(kwargs),
        occurred_at=answered,
    )


def reportable_failure(kwargs: Mapping[str, Any]) -> tuple[str, str, int, BaseException] | None:
    """(connection id, model, status, exception) of an upstream error answer worth reporting."""
    target = _ladder_target(kwargs)
    exc = kwargs.get("exception")
    if target is None or not isinstance(exc, BaseException) or isinstance(exc, LadderRoutingError):
        return None
    status = _upstream_status(exc)
    # LiteLLM gives a connection error or a timeout a status too (500, 408), on a response it
    # made up without headers: only an answer that carries the upstream's headers is one.
    if status is None or not _upstream_headers(exc):
        return None
    return target[0], target[1], status, exc


class LadderCallback(CustomLogger):
    """Reports upstream outcomes of the ladder's deployments to the ladder; never raises.

    - success: one usage event (see ``usage_event``), its tokens and LiteLLM's cost when known;
      with ``report_headers``, the upstream's rate-limit headers as an observation (fresh quota
      readings at no extra upstream call).
    - failure with an HTTP answer: its status, headers and body, which the connection's adapter
      classifies (quota exhausted → latch and cooldown to the reset). A timeout or a connection
      error says nothing about quota and is not reported.

    From the event loop (``async_log_*``), reports go through the loop's ``LadderReporter``
    (``loops``, shared with the strategy): usage in batches, quota headers coalesced per
    connection, failures sent at once and awaited, so the ladder has heard a 429 before LiteLLM's
    retry asks it again. The synchronous hooks send directly with ``client``.

    Every report carries the time the upstream answered. LiteLLM runs success hooks after the
    caller has its answer, so the headers of an earlier success can reach the ladder after a later
    429: those are dropped rather than sent to undo the 429's latch. No lock is held across a call.
    """

    def __init__(
        self, client: LadderClient, *, report_headers: bool = True, loops: PerLoop | None = None
    ) -> None:
        super().__init__()
        self.client = client
        self.report_headers = report_headers
        self.loops = loops or PerLoop(partial(client.twin, AsyncLadderClient))
        # LiteLLM may hand one failure to both the sync and the async hook: each is reported once.
        self._seen = SeenOnce(REPORTED_FAILURES_KEPT)
        self._lock = threading.Lock()  # guards _seen and _failed_at, never held across a call
        self._failed_at: dict[str, datetime] = {}

    # LiteLLM's hooks (it passes these four by keyword).
    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._guarded("usage", self.report_success, kwargs, response_obj, end_time)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._guarded("usage", self.queue_success, kwargs, response_obj, end_time)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._guarded("failure", self.report_failure, kwargs, response_obj, end_time)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        try:
            await self.areport_failure(kwargs if isinstance(kwargs, Mapping) else {}, answered_at(end_time))
        except Exception as exc:  # the caller's request must never fail for want of a report
            logger.warning("could not report the failure to the ladder: %s", exc, exc_info=True)

    def _guarded(self, what: str, report: Any, kwargs: Any, response_obj: Any, end_time: Any) -> None:
        try:
            report(kwargs if isinstance(kwargs, Mapping) else {}, response_obj, answered_at(end_time))
        except Exception as exc:  # the caller's request must never fail for want of a report
            logger.warning("could not report the %s to the ladder: %s", what, exc, exc_info=True)

    # --- from the event loop ----------------------------------------------------------------

    def queue_success(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        event = usage_event(kwargs, response_obj, answered)
        if event is None:
            return
        reporter = self.loops.reporter
        reporter.offer_usage(event)
        headers = _quota_headers(_success_headers(kwargs, response_obj)) if self.report_headers else {}
        if headers:
            reporter.offer_headers(event.connection_id, headers, answered)

    async def areport_failure(self, kwargs: Mapping[str, Any], answered: datetime) -> None:
        failure = reportable_failure(kwargs)
        if failure is None or not self._first_report(failure[3], failure[0], answered):
            return
        connection_id, model, status, exc = failure
        headers, body = _failure_details(exc)
        await self.loops.reporter.report_failure(
            connection_id, status, headers=headers, body=body, model=model, observed_at=answered
        )

    # --- synchronous ------------------------------------------------------------------------

    def report_success(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        event = usage_event(kwargs, response_obj, answered)
        if event is None:
            return
        self.client.report_usage(event)
        headers = _quota_headers(_success_headers(kwargs, response_obj)) if self.report_headers else {}
        if not headers:
            return
        connection_id = event.connection_id
        with self._lock:
            failed_at = self._failed_at.get(connection_id)
        if failed_at is not None and answered <= failed_at:
            # Older than a failure already reported: at the ladder it would read as the newer
            # word and undo the failure's latch. The failure's evidence stands.
            logger.debug("quota headers of %s from %s dropped: a failure came after", connection_id, answered)
            return
        self.client.report_observation(connection_id, headers, observed_at=answered)

    def report_failure(self, kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> None:
        failure = reportable_failure(kwargs)
        if failure is None or not self._first_report(failure[3], failure[0], answered):
            return
        connection_id, model, status, exc = failure
        headers, body = _failure_details(exc)
        self.client.report_failure(
            connection_id, status, headers=headers, body=body, model=model, observed_at=answered
        )

    def _first_report(self, exc: BaseException, connection_id: str, answered: datetime) -> bool:
        with self._lock:
            if not self._seen.first(exc):
                return False
            self._failed_at[connection_id] = max(answered, self._failed_at.get(connection_id, answered))
            return True

    def drain(self) -> int:
        """Send the usage still queued, synchronously (when the loop that queued it is gone, and at
        interpreter exit); never raises."""
        reporter = self.loops.current_reporter
        if reporter is None or not reporter.queue_length:
            return 0
        try:
            return reporter.drain_sync(self.client)
        except Exception as exc:  # a client closed by its owner, say
            logger.warning("could not send the %d usage events still queued: %s", reporter.queue_length, exc)
            return 0


# --- installing both --------------------------------------------------------------------------


def install_ladder(
    router: Router,
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
    import litellm

    loops = PerLoop(partial(client.twin, AsyncLadderClient), reporter_options=reporter_options)
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
    import litellm

    callback.drain()
    atexit.unregister(callback.drain)
    litellm.logging_callback_manager.remove_callback_from_all_lists(callback, require_self=False)
