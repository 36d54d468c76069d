"""The proxy hook's routing of one request (ladder_client.litellm_proxy_routing), as pure functions:
each attempt's narrowing to one connection, and the refusal of an empty pool. The same through the
hook and a real Router: test_litellm_proxy.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ladder_client import EmptyPool, Resolution
from ladder_client.litellm_deployments import LadderPoolEmpty
from ladder_client.litellm_proxy_routing import empty_pool_refusal, first_allowed, skipped_by_litellm

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def deployment(ident: str, connection_id: str, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    keys = {"ladder_connection_id": connection_id, "ladder_provider": "claude", "ladder_model": model}
    return {"model_name": "auto/thrifty", "model_info": {"id": ident, **keys}}


def ids(deployments: list[Any]) -> list[str]:
    return [d["model_info"]["id"] for d in deployments]


def test_an_attempt_gets_the_first_allowed_connection_that_has_not_failed() -> None:
    deployments = [
        deployment("other-model", "plan-a", model="another-model"),
        deployment("c-1", "plan-c"),
        deployment("a-1", "plan-a"),
        {"model_name": "auto/thrifty", "model_info": {"id": "bare"}},
        deployment("a-2", "plan-a"),
    ]
    pool = [["claude", "claude-sonnet-4-5", ["plan-a", "plan-c"]]]
    assert ids(first_allowed(pool, deployments, set())) == ["a-1", "a-2"]
    skipped = skipped_by_litellm({"_retry_skipped_deployment_ids": ["a-1"]})  # LiteLLM's retry loop
    assert ids(first_allowed(pool, deployments, skipped)) == ["a-2"]
    assert ids(first_allowed(pool, deployments, {"a-1", "a-2"})) == ["c-1"]
    assert first_allowed(pool, deployments, {"a-1", "a-2", "c-1"}) == []


def test_the_next_pool_entry_serves_when_the_first_has_no_deployment_left() -> None:
    pool = [["claude", "claude-sonnet-4-5", ["plan-a"]], ["claude", "claude-haiku-4-5", ["plan-a"]]]
    deployments = [deployment("sonnet", "plan-a"), deployment("haiku", "plan-a", model="claude-haiku-4-5")]
    assert ids(first_allowed(pool, deployments, {"sonnet"})) == ["haiku"]


def empty_pool(retry_at: datetime | None) -> LadderPoolEmpty:
    empty = EmptyPool(code="all_rungs_exhausted", message="every rung is spent", retry_at=retry_at)
    resolution = Resolution(
        model="auto/thrifty",
        grouping="thrifty",
        category=None,
        resolved_at=NOW,
        pool=(),
        excluded=(),
        empty=empty,
        refresh=(),
    )
    return LadderPoolEmpty("auto/thrifty", empty, resolution)


def test_an_empty_pool_is_refused_429_with_retry_after_or_503_without() -> None:
    refused: Any = empty_pool_refusal(empty_pool(None), NOW)
    assert (refused.status_code, refused.headers) == (503, {})
    assert refused.detail["code"] == "all_rungs_exhausted"
    refused = empty_pool_refusal(empty_pool(NOW + timedelta(seconds=90.2)), NOW)
    assert (refused.status_code, refused.headers) == (429, {"Retry-After": "91"})
    assert refused.detail["retry_at"] == (NOW + timedelta(seconds=90.2)).isoformat()
