"""The benchmark's faults (``BenchmarkFault``) over real HTTP: what the server sends."""

from __future__ import annotations

import aiohttp
import pytest

from orchestrator import Request
from orchestrator.errors import ConnectionFailed
from providers import BenchmarkFault, Fault, OpenAIChat, SimulatedServer

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
