"""The proxy hook's configuration (ladder_client.litellm_proxy_config): the start-up check of the
proxy's config.yaml, each problem naming its entry, and the numbers read from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ladder_client.litellm_deployments import LadderConfigError
from ladder_client.litellm_proxy_config import config_problems, validate_proxy_config
from tests.ladder_client.conftest import PLAN
from tests.ladder_client.test_litellm_integration import SUBSCRIPTION

pytest.importorskip("litellm")
from ladder_client.litellm_proxy import LadderProxyHook  # noqa: E402 - needs LiteLLM, an optional extra


def config(**sections: Any) -> dict[str, Any]:
    deployment = {
        "model_name": SUBSCRIPTION,
        "litellm_params": {"model": "anthropic/claude-sonnet-4-5"},
        "model_info": {
            "ladder_connection_id": PLAN,
            "ladder_provider": "claude",
            "ladder_model": "claude-sonnet-4-5",
        },
    }
    return {
        "model_list": [deployment, {"model_name": "paid", "litellm_params": {"model": "openai/gpt-4o"}}],
        **sections,
    }


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"router_settings": {"fallbacks": [{SUBSCRIPTION: ["paid"]}]}},
            "router_settings.fallbacks[0]: 'auto/subscription'",
        ),
        (
            {"litellm_settings": {"default_fallbacks": ["paid"]}},
            "litellm_settings.default_fallbacks: ['paid']",
        ),
        (
            {"router_settings": {"context_window_fallbacks": [{"*": ["paid"]}]}},
            "router_settings.context_window_fallbacks[0]: '*'",
        ),
        (
            {"router_settings": {"content_policy_fallbacks": [{SUBSCRIPTION: ["paid"]}]}},
            "content_policy_fallbacks[0]",
        ),
    ],
)
def test_it_refuses_a_fallback_leading_an_auto_group_away(sections: dict[str, Any], message: str) -> None:
    with pytest.raises(LadderConfigError, match=message.replace("[", r"\[").replace("*", r"\*")):
        validate_proxy_config(config(**sections))


def test_it_accepts_fallbacks_between_groups_outside_the_ladder() -> None:
    assert config_problems(config(router_settings={"fallbacks": [{"paid": ["other"]}]})) == []


def test_it_refuses_an_auto_deployment_without_the_ladder_keys_naming_it() -> None:
    broken = config()
    broken["model_list"][0]["model_info"] = {"ladder_connection_id": PLAN}
    assert config_problems(broken) == [
        "model_list[0]: auto/subscription: deployment 'anthropic/claude-sonnet-4-5' needs model_info "
        "ladder_provider, ladder_model (strings) so that the ladder can route it"
    ]


def test_the_start_up_check_reads_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model_list:\n"
        "  - model_name: auto/subscription\n"
        "    litellm_params: {model: anthropic/claude-sonnet-4-5}\n"
        "    model_info: {ladder_connection_id: claude-max, ladder_provider: claude, ladder_model: x}\n"
        "router_settings:\n"
        "  fallbacks: [{auto/subscription: [paid]}]\n"
    )
    monkeypatch.setenv("LADDER_PROXY_CONFIG", str(path))
    with pytest.raises(LadderConfigError, match=r"router_settings.fallbacks\[0\]"):
        LadderProxyHook(url="http://ladder", token="t").check_start_up()
    path.write_text(path.read_text().split("router_settings")[0])
    with pytest.raises(LadderConfigError, match="LADDER_URL and LADDER_TOKEN"):
        LadderProxyHook().check_start_up()
    LadderProxyHook(url="http://ladder", token="t").check_start_up()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LADDER_RESOLVE_CACHE_S", "soon"),
        ("LADDER_TIMEOUT_S", "-1"),
        ("LADDER_TIMEOUT_S", "nan"),
        ("LADDER_FLUSH_INTERVAL_S", "0"),
    ],
)
def test_a_bad_number_in_the_environment_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(LadderConfigError, match=name):
        LadderProxyHook.from_environment()
