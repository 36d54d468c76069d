"""Every adapter, keyed by connection kind, and the lookup a connection uses."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ladder.providers.anthropic_api import AnthropicApiAdapter
from ladder.providers.antigravity import AntigravityAdapter
from ladder.providers.base import BaseAdapter
from ladder.providers.cerebras import CerebrasAdapter
from ladder.providers.claude import ClaudeOAuthAdapter
from ladder.providers.codex import CodexAdapter
from ladder.providers.copilot import CopilotAdapter
from ladder.providers.cursor import CursorAdapter
from ladder.providers.gemini_cli import GeminiCliAdapter
from ladder.providers.groq import GroqAdapter
from ladder.providers.kimi import KimiCodingAdapter
from ladder.providers.kiro import KiroAdapter
from ladder.providers.minimax import MiniMaxAdapter
from ladder.providers.mistral import MistralAdapter
from ladder.providers.moonshot import MoonshotApiAdapter
from ladder.providers.openai_api import OpenAIApiAdapter
from ladder.providers.openrouter import OpenRouterAdapter
from ladder.providers.qwen import QwenOAuthAdapter
from ladder.providers.zai import ZaiAdapter

_ALL: tuple[BaseAdapter, ...] = (
    ClaudeOAuthAdapter(),
    AnthropicApiAdapter(),
    CodexAdapter(),
    OpenAIApiAdapter(),
    CopilotAdapter(),
    GeminiCliAdapter(),
    AntigravityAdapter(),
    KiroAdapter(),
    CursorAdapter(),
    ZaiAdapter(),
    KimiCodingAdapter(),
    MiniMaxAdapter(),
    QwenOAuthAdapter(),
    OpenRouterAdapter(),
    GroqAdapter(),
    CerebrasAdapter(),
    MistralAdapter(),
    MoonshotApiAdapter(),
)

# Keyed by connection kind (the fixture name): "claude-oauth", "codex-chatgpt", …
ADAPTERS: Mapping[str, BaseAdapter] = MappingProxyType({adapter.kind: adapter for adapter in _ALL})


def get_adapter(provider: str, auth_type: str | None = None) -> BaseAdapter | None:
    """The adapter of a connection: its provider and (normalised) auth_type. Without an auth_type,
    the provider's adapter when it has exactly one. None when nothing matches: an auth_type no
    adapter knows is not silently served by another kind's endpoint."""
    provider = provider.strip().lower()
    auth = auth_type.strip().lower() if auth_type and auth_type.strip() else None
    candidates = [a for a in _ALL if a.provider == provider and (auth is None or a.auth_type == auth)]
    return candidates[0] if len(candidates) == 1 else None
