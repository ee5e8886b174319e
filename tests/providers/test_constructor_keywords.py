"""Provider constructors: an unknown keyword says which was meant; every provider takes
``retry_policy=``, which the engine uses for that provider alone."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import FallbackAgent, RetryPolicy
from orchestrator.errors import ServerError
from orchestrator.function import FunctionProvider
from orchestrator.testing import FakeClock
from providers import (
    AnthropicMessages,
    AzureOpenAI,
    BedrockConverse,
    ClaudeCode,
    CLIAgent,
    Codex,
    GeminiCLI,
    GeminiGenerate,
    HTTPFallback,
    OpenAIChat,
    VertexAnthropic,
    VertexGemini,
)


def fn(request: Any) -> str:
    return "ok"


#: How each provider is built with its required arguments, plus **extra.
BUILD: dict[str, Any] = {
    "OpenAIChat": lambda **kw: OpenAIChat("m", **kw),
    "AnthropicMessages": lambda **kw: AnthropicMessages("m", **kw),
    "GeminiGenerate": lambda **kw: GeminiGenerate("m", **kw),
    "AzureOpenAI": lambda **kw: AzureOpenAI(deployment="d", resource="r", **kw),
    "BedrockConverse": lambda **kw: BedrockConverse("m", region="us-east-1", **kw),
    "VertexAnthropic": lambda **kw: VertexAnthropic("m", project="p", location="us-east5", **kw),
    "VertexGemini": lambda **kw: VertexGemini("m", project="p", location="us-east5", **kw),
    "HTTPFallback": lambda **kw: HTTPFallback("http://127.0.0.1:9/x", **kw),
    "CLIAgent": lambda **kw: CLIAgent(["mytool"], **kw),
    "ClaudeCode": lambda **kw: ClaudeCode(**kw),
    "Codex": lambda **kw: Codex(**kw),
    "GeminiCLI": lambda **kw: GeminiCLI(**kw),
    "FunctionProvider": lambda **kw: FunctionProvider(fn, **kw),
}


@pytest.mark.parametrize("provider", BUILD)
def test_attempt_timeout_points_at_timeout_and_fallback_agent(provider: str) -> None:
    with pytest.raises(TypeError) as info:
        BUILD[provider](attempt_timeout=5)
    text = str(info.value)
    assert text.startswith(f"{provider}() got an unexpected keyword argument 'attempt_timeout'")
    assert "attempt_timeout= belongs to FallbackAgent" in text
    if provider != "FunctionProvider":  # it has no timeout of its own
        assert "the provider's own keyword is timeout=" in text


@pytest.mark.parametrize("provider", BUILD)
def test_an_unknown_keyword_suggests_the_close_name(provider: str) -> None:
    with pytest.raises(TypeError) as info:
        BUILD[provider](nmae="x")
    assert "unexpected keyword argument 'nmae' (did you mean 'name'?)" in str(info.value)
    assert "it takes:" in str(info.value) and "retry_policy" in str(info.value)


def test_model_name_suggests_model() -> None:
    for cls in (OpenAIChat, AnthropicMessages, GeminiGenerate):
        with pytest.raises(TypeError, match=r"'model_name' \(did you mean 'model'\?\)"):
            cls(model_name="gpt-4o-mini")  # type: ignore[call-arg]


def test_agent_settings_on_a_provider_say_where_they_belong() -> None:
    with pytest.raises(TypeError, match=r"max_retries= belongs to FallbackAgent.*retry_policy="):
        OpenAIChat("m", max_retries=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="on_fallback= belongs to FallbackAgent"):
        FunctionProvider(fn, on_fallback=print)  # type: ignore[call-arg]


@pytest.mark.parametrize("provider", BUILD)
def test_every_provider_takes_retry_policy(provider: str) -> None:
    policy = RetryPolicy(max_retries=5, strategy="none")
    built = BUILD[provider](retry_policy=policy)
    assert built.retry_policy is policy
    assert BUILD[provider]().retry_policy is None
    with pytest.raises(TypeError, match=r"retry_policy: expected RetryPolicy or None, got dict"):
        BUILD[provider](retry_policy={"max_retries": 1})


async def test_the_engine_uses_a_providers_retry_policy(clock: FakeClock) -> None:
    calls = 0

    async def flaky(request: Any) -> str:
        nonlocal calls
        calls += 1
        raise ServerError("down")

    own = FunctionProvider(flaky, name="own", retry_policy=RetryPolicy(max_retries=4))
    agent = FallbackAgent([own, FunctionProvider(fn, name="b")], max_retries=0, clock=clock)
    assert (await agent.run("x")).handled_by == "b"
    assert calls == 5 and clock.sleeps == [1.0, 2.0, 4.0, 8.0]
    http = OpenAIChat("m", retry_policy=RetryPolicy(max_retries=7))
    assert FallbackAgent([http]).policies[0].max_retries == 7


def test_known_keywords_and_positional_use_still_work() -> None:
    OpenAIChat("m", timeout=5, name="n", base_url="https://example.com/v1")
    OpenAIChat(model="m")
    CLIAgent(["tool"], parse=None, timeout=1)
    ClaudeCode(model="sonnet", timeout=3, cwd=None)
    FunctionProvider(fn, name="f", run_in_thread=False)


@pytest.mark.parametrize("cls", [ClaudeCode, Codex, GeminiCLI])
def test_first_token_timeout_on_a_cli_agent_suggests_its_idle_timeout(cls: Any) -> None:
    with pytest.raises(TypeError) as err:
        cls(first_token_timeout=5)
    message = str(err.value)
    assert "the provider's own keyword is idle_timeout= (seconds without output)" in message
    assert "first_token_timeout= belongs to FallbackAgent(...)" in message
