"""Context windows and prices over real loopback HTTP, against the simulated server."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, Request
from orchestrator.errors import ContextWindowExceeded
from orchestrator.tokens import MAX_BYTES_PER_TOKEN
from providers import AnthropicMessages, Fault, GeminiGenerate, OpenAIChat, SimulatedServer

KEY = "sk-test-0123456789"
LONG = "word " * (MAX_BYTES_PER_TOKEN * 2000 // 5)  # at least 2000 tokens


async def test_the_small_window_model_receives_no_request(sim: SimulatedServer) -> None:
    small = OpenAIChat("small", base_url=sim.openai_url, api_key=KEY, context_window=1000)
    large = AnthropicMessages(
        "large", base_url=sim.anthropic_url, api_key=KEY, context_window=200_000
    )
    agent = FallbackAgent([small, large])
    results = await asyncio.gather(*(agent.run(LONG) for _ in range(100)))
    assert sim.count("openai") == 0 and sim.count("anthropic") == 100
    for result in results:
        assert result.handled_by == "anthropic:large"
        first = result.attempts[0]
        assert first.reason == "context_window" and isinstance(first.error, ContextWindowExceeded)
    # A short prompt fits and goes to the first model.
    assert (await agent.run("short")).handled_by == "openai:small"
    assert sim.count("openai") == 1


async def test_the_vendors_own_context_length_error_still_falls_over(
    sim: SimulatedServer,
) -> None:
    body = {"error": {"code": "context_length_exceeded", "message": "maximum context length"}}
    sim.script("openai", [Fault.status(400, body=body)])
    small = OpenAIChat("small", base_url=sim.openai_url, api_key=KEY)  # window unknown
    large = GeminiGenerate("large", base_url=sim.gemini_url, api_key=KEY)
    result = await FallbackAgent([small, large]).run("a prompt")
    assert result.handled_by == "gemini:large" and sim.count("openai") == 1
    assert result.attempts[0].reason == "context_window"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_known_model_is_costed_without_price(sim: SimulatedServer, stream: bool) -> None:
    sim.set_default("openai", Fault.ok("hi", usage=(1_000_000, 100_000)))
    known = OpenAIChat("gpt-4o-mini", base_url=sim.openai_url, api_key=KEY, catalogue=True)
    agent = FallbackAgent([known])
    if stream:
        async with agent.stream(Request("hi")) as chunks:
            assert "".join([c async for c in chunks]) == "hi"
        result = chunks.result
    else:
        result = await agent.run("hi")
    assert result.cost_usd == pytest.approx(0.15 + 0.06)


async def test_an_unknown_model_gets_no_cost(sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.ok("hi", usage=(1000, 100)))
    unknown = OpenAIChat("my-finetune", base_url=sim.openai_url, api_key=KEY, catalogue=True)
    not_asked = OpenAIChat("gpt-4o-mini", base_url=sim.openai_url, api_key=KEY)
    for provider in (unknown, not_asked):
        result = await FallbackAgent([provider]).run("hi")
        assert result.usage is not None and result.cost_usd is None


async def test_a_stream_skips_the_small_window_too(sim: SimulatedServer) -> None:
    small = OpenAIChat("small", base_url=sim.openai_url, api_key=KEY, context_window=1000)
    large = GeminiGenerate("large", base_url=sim.gemini_url, api_key=KEY)
    async with FallbackAgent([small, large]).stream(Request(LONG)) as chunks:
        text = "".join([c async for c in chunks])
    assert text and chunks.result.handled_by == "gemini:large"
    assert sim.count("openai") == 0
    assert chunks.result.attempts[0].reason == "context_window"
