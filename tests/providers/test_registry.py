from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ladder.providers import ADAPTERS, get_adapter
from tests.providers.conftest import FIXTURES_DIR

# The fixture → provider / auth_type table of KINDS.md.
KINDS = {
    "claude-oauth": ("claude", "oauth"),
    "anthropic-api": ("anthropic", "apikey"),
    "codex-chatgpt": ("codex", "oauth"),
    "openai-api": ("openai", "apikey"),
    "copilot": ("copilot", "oauth"),
    "gemini-cli": ("gemini-cli", "oauth"),
    "antigravity": ("antigravity", "oauth"),
    "kiro": ("kiro", "oauth"),
    "cursor": ("cursor", "cookie"),
    "zai-glm": ("zai", "apikey"),
    "kimi-coding": ("kimi-coding", "apikey"),
    "minimax-coding": ("minimax", "apikey"),
    "qwen-oauth": ("qwen", "oauth"),
    "openrouter": ("openrouter", "apikey"),
    "groq": ("groq", "apikey"),
    "cerebras": ("cerebras", "apikey"),
    "mistral": ("mistral", "apikey"),
    "moonshot-api": ("moonshot", "apikey"),
}


def test_it_has_one_adapter_per_fixture_kind_with_the_kinds_ids() -> None:
    assert {path.stem for path in FIXTURES_DIR.glob("*.json")} == set(KINDS)
    assert {kind: (a.provider, a.auth_type) for kind, a in ADAPTERS.items()} == KINDS


@pytest.mark.parametrize(("kind", "ids"), sorted(KINDS.items()))
def test_it_finds_each_adapter_by_provider_and_auth_type(kind: str, ids: tuple[str, str]) -> None:
    provider, auth_type = ids
    assert get_adapter(provider, auth_type) is ADAPTERS[kind]
    assert get_adapter(f" {provider.upper()} ", f" {auth_type.upper()} ") is ADAPTERS[kind]
    assert get_adapter(provider, None) is ADAPTERS[kind]


def test_it_finds_no_adapter_for_an_unknown_provider_or_auth_type() -> None:
    assert get_adapter("overflowing", "apikey") is None
    assert get_adapter("claude", "apikey") is None  # an API key is the anthropic kind, not Claude OAuth
    assert get_adapter("claude", "  ") is ADAPTERS["claude-oauth"]


def test_it_gives_every_polling_adapter_a_default_base_url() -> None:
    for adapter in ADAPTERS.values():
        if adapter.supports_poll:
            assert (adapter.default_base_url or "").startswith("https://"), adapter.kind


def test_it_keeps_django_out_of_the_providers() -> None:
    code = "import sys, ladder.providers; print(any(m.split('.')[0] == 'django' for m in sys.modules))"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
