"""The benchmark's faults (``BenchmarkFault``) over real HTTP: what the server sends."""

from __future__ import annotations

import aiohttp
import pytest

from orchestrator import Request
from orchestrator.errors import ConnectionFailed, InvalidRequest
from providers import AnthropicMessages, BenchmarkFault, Fault, OpenAIChat, SimulatedServer

CHAT = "/chat/completions"


async def test_reset_drops_the_connection_before_any_header(sim: SimulatedServer) -> None:
    sim.script("openai", [BenchmarkFault.reset()])
    async with OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="k") as provider:
        with pytest.raises(ConnectionFailed):
            await provider.complete(Request("hi"))
    assert sim.count("openai") == 1


async def test_unterminated_sends_everything_but_done_and_holds(sim: SimulatedServer) -> None:
    sim.script("openai", [BenchmarkFault.unterminated(hold=0.05, usage=(9, 6))])
    body = {
        "model": "gpt-sim",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with aiohttp.ClientSession() as http, http.post(sim.openai_url + CHAT, json=body) as r:
        raw = (await r.read()).decode()
    assert '"finish_reason":"stop"' in raw.replace(" ", "")
    assert '"completion_tokens":6' in raw.replace(" ", "")
    assert "[DONE]" not in raw


def test_from_spec_builds_them() -> None:
    assert Fault.from_spec({"reset": None}) == BenchmarkFault.reset()
    assert Fault.from_spec({"unterminated": 2}).seconds == 2
    assert Fault.from_spec("refuse_prefill").then == Fault.ok()


async def test_refuse_prefill_refuses_only_an_assistant_last_message(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", BenchmarkFault.refuse_prefill())
    async with AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key="k") as p:
        assert (await p.complete(Request("hi"))).text
        prefill = Request(
            messages=({"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hel"})
        )
        with pytest.raises(InvalidRequest) as info:
            await p.complete(prefill)
    assert "prefill" in str(info.value)
