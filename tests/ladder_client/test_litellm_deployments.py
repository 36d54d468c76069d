"""A LiteLLM model group's deployments as the ladder's candidates (ladder_client.litellm_deployments):
no LiteLLM needed."""

from __future__ import annotations

from ladder_client.litellm_deployments import ladder_candidates
from tests.ladder_client.conftest import CHEAP, CHEAP_MODEL, PLAN, PLAN_MODEL


def plan_keys() -> dict[str, str]:
    return {"ladder_connection_id": PLAN, "ladder_provider": PLAN_MODEL[0], "ladder_model": PLAN_MODEL[1]}


def cheap_keys() -> dict[str, str]:
    return {"ladder_connection_id": CHEAP, "ladder_provider": CHEAP_MODEL[0], "ladder_model": CHEAP_MODEL[1]}


def test_it_groups_deployments_into_logical_candidates_in_order() -> None:
    plan_a = {"model_info": {**plan_keys(), "id": "a"}}
    plan_b = {"model_info": {**plan_keys(), "ladder_connection_id": "plan-2", "id": "b"}}
    plan_a_again = {"model_info": {**plan_keys(), "id": "a2"}}
    cheap = {"model_info": {**cheap_keys(), "id": "c"}}

    candidates, targets = ladder_candidates("auto/thrifty", [plan_a, cheap, plan_b, plan_a_again])

    assert [(c.provider, c.model, c.connection_id, c.allowed_connection_ids) for c in candidates] == [
        (*PLAN_MODEL, None, (PLAN, "plan-2")),
        (*CHEAP_MODEL, None, (CHEAP,)),
    ]
    assert targets[(*PLAN_MODEL, PLAN)] is plan_a  # the first deployment of a connection serves it
