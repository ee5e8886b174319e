"""Idle means "no progress" (issue 17 item 2), over real loopback HTTP (the simulator).

Every protocol event that carries progress (content, block and message boundaries, usage,
the end) resets ``idle_timeout``; keep-alives do not; a stream whose content is complete
is a success even if its tail comes late.
"""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent
from orchestrator.errors import StreamStalled
from providers import AnthropicMessages, Fault, GeminiGenerate, OpenAIChat, SimulatedServer

KEY = "sk-test-0123456789"
TEXT = "one two three four"


def provider(sim: SimulatedServer, route: str) -> AnthropicMessages | OpenAIChat | GeminiGenerate:
    if route == "anthropic":
        return AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
    if route == "openai":
        return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
    return GeminiGenerate("gemini-sim", base_url=sim.gemini_url, api_key=KEY)


@pytest.mark.parametrize("route", ["anthropic", "openai", "gemini"])
async def test_a_healthy_stream_with_slow_events_is_not_stalled(route: str) -> None:
    """0.2 s between SSE events and ``idle_timeout=0.5``: on main the Anthropic and
    OpenAI streams failed after their whole text arrived (the tail events did not count)."""
    async with SimulatedServer() as sim:
        sim.set_default(route, Fault.ok(TEXT, chunks=2, interval=0.2))
        agent = FallbackAgent([provider(sim, route)], idle_timeout=0.5, max_retries=0)
        async with agent.stream("hi") as s:
            chunks = [c async for c in s]
        assert "".join(chunks) == TEXT == s.result.text
        assert [a.reason for a in s.attempts] == [None]
        assert (await agent.run("hi")).text == TEXT  # run streams under the deadline too


@pytest.mark.parametrize("route", ["anthropic", "openai"])
async def test_keep_alives_alone_do_not_hold_a_stalled_stream(route: str) -> None:
    async with SimulatedServer() as sim:
        sim.set_default(route, Fault.stall(2, keepalive=0.1))
        agent = FallbackAgent([provider(sim, route)], idle_timeout=0.5, max_retries=0)
        with pytest.raises(StreamStalled):
            async with agent.stream("hi", mid_stream="raise") as s:
                async for _ in s:
                    pass
