"""The proxy hook's configuration: its environment, and the start-up check of the proxy's
``config.yaml`` (or of the live router) for anything that would let an ``auto/*`` request escape the
ladder. It imports no LiteLLM: the proxy's server module is read from ``sys.modules`` when loaded.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ladder_client.litellm_deployments import LadderConfigError, is_auto_id, ladder_candidates

URL_ENV = "LADDER_URL"
TOKEN_ENV = "LADDER_TOKEN"  # noqa: S105  (the variable's name)
CACHE_ENV = "LADDER_RESOLVE_CACHE_S"
TIMEOUT_ENV = "LADDER_TIMEOUT_S"
FLUSH_ENV = "LADDER_FLUSH_INTERVAL_S"  # how often queued usage leaves (ladder_client.reporting)
CONFIG_ENV = "LADDER_PROXY_CONFIG"

FALLBACK_SETTINGS = ("fallbacks", "default_fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
CONFIG_SECTIONS = ("router_settings", "litellm_settings")


def _auto_deployments(model_list: object) -> list[tuple[int, str, Mapping[str, Any]]]:
    """(index, model group, deployment) of each deployment of an ``auto/*`` group."""
    found = []
    for index, deployment in enumerate(model_list if isinstance(model_list, list) else ()):
        name = deployment.get("model_name") if isinstance(deployment, Mapping) else None
        if isinstance(name, str) and is_auto_id(name):
            found.append((index, name, deployment))
    return found


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
    auto = _auto_deployments(config.get("model_list"))
    auto_groups = list(dict.fromkeys(group for _, group, _ in auto))
    problems: list[str] = []
    for index, group, deployment in auto:
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


def proxy_config_path() -> str | None:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return explicit
    path = getattr(sys.modules.get("litellm.proxy.proxy_server"), "user_config_file_path", None)
    return path if isinstance(path, str) and path else None


def env_seconds(name: str, default: float, *, zero_allowed: bool) -> float:
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
