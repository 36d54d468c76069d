"""What LiteLLM's success and failure hooks tell the ladder: the usage of a success, its quota
headers, and an upstream error answer worth reporting, read from the ``kwargs`` LiteLLM hands its
callbacks. Shared by the Router's callback (``ladder_client.litellm_callback``) and the proxy's hook
(``ladder_client.litellm_proxy``); it imports no LiteLLM.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ladder_client.litellm_deployments import CONNECTION_KEY, MODEL_KEY, LadderRoutingError
from ladder_client.types import UsageEvent

logger = logging.getLogger(__name__)

# Response headers worth sending to the ladder: its adapters read rate-limit and quota headers
# (anthropic-ratelimit-unified-*, x-codex-*, x-ratelimit-*); anything else is noise.
QUOTA_HEADER_MARKERS = ("limit", "quota", "codex", "reset", "retry-after", "usage")

# (connection id, ladder model, status, the exception) of an upstream error answer
Failure = tuple[str, str, int, BaseException]


def answering_model_info(kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``model_info`` of the deployment that answered a call."""
    params = kwargs.get("litellm_params")
    if isinstance(params, Mapping):
        info = params.get("model_info")
        if isinstance(info, Mapping):
            return info
        metadata = params.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("model_info"), Mapping):
            return metadata["model_info"]
    return {}


def answering_connection(kwargs: Mapping[str, Any]) -> tuple[str, str] | None:
    """(connection id, ladder model) of the deployment that answered; None if not the ladder's."""
    info = answering_model_info(kwargs)
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


def usage_event(kwargs: Mapping[str, Any], response_obj: object, answered: datetime) -> UsageEvent | None:
    """The usage a success of a ladder deployment reports: request_id = LiteLLM's call id, unique
    per call, so a replayed report is not counted twice. None for a cache hit (no upstream was
    used), another deployment, or a call without an id."""
    target = answering_connection(kwargs)
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


def _as_headers(value: object) -> dict[str, str]:
    items = value.items() if hasattr(value, "items") else ()
    return {str(name): str(item) for name, item in items}


def quota_headers(kwargs: Mapping[str, Any], response: object) -> dict[str, str]:
    """The upstream's rate-limit and quota headers of a success."""
    headers = _as_headers(kwargs.get("response_headers"))
    if not headers:
        # LiteLLM also keeps the upstream's headers on the response, prefixed "llm_provider-".
        hidden = getattr(response, "_hidden_params", None)
        additional = _as_headers(hidden.get("additional_headers") if isinstance(hidden, Mapping) else None)
        prefix = "llm_provider-"
        headers = {
            name[len(prefix) :]: value for name, value in additional.items() if name.startswith(prefix)
        }
    return {
        name: value
        for name, value in headers.items()
        if any(marker in name.lower() for marker in QUOTA_HEADER_MARKERS)
    }


def _upstream_headers(exc: BaseException) -> dict[str, str]:
    response = getattr(exc, "response", None)
    return _as_headers(getattr(response, "headers", None)) or _as_headers(
        getattr(exc, "litellm_response_headers", None)
    )


def reportable_failure(kwargs: Mapping[str, Any]) -> Failure | None:
    """(connection id, model, status, exception) of an upstream error answer worth reporting."""
    target = answering_connection(kwargs)
    exc = kwargs.get("exception")
    if target is None or not isinstance(exc, BaseException) or isinstance(exc, LadderRoutingError):
        return None
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        return None
    # LiteLLM gives a connection error or a timeout a status too (500, 408), on a response it
    # made up without headers: only an answer that carries the upstream's headers is one.
    if not _upstream_headers(exc):
        return None
    return target[0], target[1], status, exc


def failure_details(exc: BaseException) -> tuple[dict[str, str], object]:
    """The upstream error answer's headers and body (JSON when it parses, else its text)."""
    response = getattr(exc, "response", None)
    headers = _upstream_headers(exc)
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
