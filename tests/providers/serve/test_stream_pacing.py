"""Issue 22: a client's stream moves when the upstream's does (512 SSE streams without a stall).

The upstream sends its stop reason and its usage as two events, an interval apart; the
gateway's end of the stream needs both, so without a signal the client heard nothing for
two intervals (every stream of ``bench/gateway.py``'s SSE check: 0.3 s beyond the
upstream's gap). Now each upstream event without text reaches the client as an SSE
comment when it arrives.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import openai

from orchestrator import FallbackAgent
from providers import Fault, OpenAIChat, SimulatedServer
from tests.providers.serve.conftest import UPSTREAM_KEY, gateway

INTERVAL = 0.15
STREAMS = 16


CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


async def _arrivals(
    http: aiohttp.ClientSession, url: str, path: str = "/v1/chat/completions", body: Any = CHAT
) -> list[tuple[float, str]]:
    """Each line of one streamed reply, with the time it arrived."""
    lines: list[tuple[float, str]] = []
    async with http.post(url + path, json=body) as r:
        assert r.status == 200
        async for raw in r.content:
            if line := raw.decode().strip():
                lines.append((time.monotonic(), line))
    return lines


def _paced_agent(sim: SimulatedServer) -> FallbackAgent:
    """Two text chunks an interval apart; the stop reason and usage an interval apart too."""
    sim.set_default("openai", Fault.ok("one two", chunks=2, interval=INTERVAL))
    gpt = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY)
    return FallbackAgent([gpt], max_retries=0, retry_strategy="none")


def _pinged_before_the_end(lines: list[tuple[float, str]], text_marker: str) -> None:
    """A keep-alive reached the client after the last text, an interval before the end:
    the stop reason's comment, sent before the usage let the end go out."""
    last_text = max(i for i, (_, line) in enumerate(lines) if text_marker in line)
    pings = [i for i, (_, line) in enumerate(lines) if i > last_text and line[0] == ":"]
    assert pings, "nothing reached the client between the last text and the end"
    assert lines[-1][0] - lines[pings[0]][0] > INTERVAL / 3
    assert lines[pings[0]][1] == ": keep-alive"


async def test_each_upstream_event_reaches_the_client_when_it_comes(
    sim: SimulatedServer,
) -> None:
    async with gateway({"m": _paced_agent(sim)}) as url, aiohttp.ClientSession() as http:
        streams = await asyncio.gather(*(_arrivals(http, url) for _ in range(STREAMS)))
    for lines in streams:
        assert lines[-1][1] == "data: [DONE]"
        _pinged_before_the_end(lines, '"content":"')


async def test_a_responses_stream_moves_with_the_upstream_and_its_sdk_reads_it(
    sim: SimulatedServer,
) -> None:
    # Responses-format streams had no keep-alive: a client heard nothing between the last
    # text and the end (nor during a tool call's arguments). An SSE comment is skipped by
    # every SSE parser (the spec's, openai-python's, the JS SDK's, Codex's): no event,
    # no sequence number.
    body = {"model": "m", "stream": True, "input": "hi"}
    async with gateway({"m": _paced_agent(sim)}) as url, aiohttp.ClientSession() as http:
        lines = await _arrivals(http, url, "/v1/responses", body)
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        stream = await client.responses.create(model="m", input="hi", stream=True)
        kinds = [event.type async for event in stream]
        await client.close()
    assert lines[-1][1].startswith("data: ") and '"response.completed"' in lines[-1][1]
    _pinged_before_the_end(lines, "output_text.delta")
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 2
