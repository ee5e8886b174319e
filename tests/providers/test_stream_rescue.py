"""Streams are rescued by default (issue 17 item 20), over real loopback HTTP.

A stream cut mid-answer, stalled with its connection open, or broken by a malformed
chunk: with nothing set but the chain, the next attempt continues from the text
already delivered and the caller gets one whole answer.
"""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer

KEY = "sk-test-0123456789"
TEXT = "one two three four five six"

FAULTS = {
    "cut": Fault.cut_stream(after=2, text=TEXT, how="abort"),
    "stall": Fault.stall(2, keepalive=0.05),
    "malformed": Fault.invalid_json(),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_broken_stream_is_continued_by_default(fault: str) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", FAULTS[fault])
        sim.set_default("anthropic", Fault.ok(" and the rest"))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        secondary = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
        # Only the stall needs a short deadline here (the default, 20 s, is for real use).
        watch = {"idle_timeout": 0.5} if fault == "stall" else {}
        agent = FallbackAgent([primary, secondary], max_retries=0, **watch)  # type: ignore[arg-type]
        async with agent.stream("write") as s:
            chunks = [c async for c in s]
        text = "".join(chunks)
        delivered = text.removesuffix(" and the rest")
        assert delivered and delivered != text and s.result.text == text
        assert s.result.handled_by == secondary.name
        sent = sim.requests("anthropic")[0]["body"]["messages"]
        assert sent[-1] == {"role": "assistant", "content": delivered.rstrip()}
