"""Providers: one class per provider family, all speaking the same interface.

Every provider has a ``name`` and ``async complete(request) -> Response`` and
translates every failure into :mod:`orchestrator.errors`. Imports are lazy so
``import providers`` stays cheap: a provider's module (and httpx) loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.function import FunctionProvider
    from providers.anthropic import AnthropicMessages
    from providers.azure import AzureOpenAI
    from providers.bedrock import BedrockConverse
    from providers.cli import ClaudeCode, CLIAgent, Codex, GeminiCLI
    from providers.gemini.client import GeminiGenerate
    from providers.generic_http import HTTPFallback
    from providers.http.client import close_shared_client, shared_client
    from providers.openai import OpenAIChat
    from providers.simulator import BenchmarkFault, Fault, SimulatedServer
    from providers.vertex import VertexAnthropic, VertexGemini

_LAZY = {
    "FunctionProvider": "orchestrator.function",
    "OpenAIChat": "providers.openai",
    "AnthropicMessages": "providers.anthropic",
    "AzureOpenAI": "providers.azure",
    "BedrockConverse": "providers.bedrock",
    "GeminiGenerate": "providers.gemini.client",
    "VertexAnthropic": "providers.vertex.anthropic",
    "VertexGemini": "providers.vertex.gemini",
    "HTTPFallback": "providers.generic_http",
    "shared_client": "providers.http.client",
    "close_shared_client": "providers.http.client",
    "CLIAgent": "providers.cli",
    "ClaudeCode": "providers.cli",
    "Codex": "providers.cli",
    "GeminiCLI": "providers.cli",
    "SimulatedServer": "providers.simulator",
    "Fault": "providers.simulator",
    "BenchmarkFault": "providers.simulator",
}

__all__ = [
    "AnthropicMessages",
    "BenchmarkFault",
    "AzureOpenAI",
    "BedrockConverse",
    "CLIAgent",
    "ClaudeCode",
    "Codex",
    "Fault",
    "FunctionProvider",
    "GeminiCLI",
    "GeminiGenerate",
    "HTTPFallback",
    "OpenAIChat",
    "SimulatedServer",
    "VertexAnthropic",
    "VertexGemini",
    "close_shared_client",
    "shared_client",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'providers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
