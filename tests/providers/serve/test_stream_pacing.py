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

import aiohttp
import openai

from orchestrator import FallbackAgent
from providers import Fault, OpenAIChat, SimulatedServer
from tests.providers.serve.conftest import UPSTREAM_KEY, gateway

INTERVAL = 0.15
STREAMS = 16


async def _arrivals(http: aiohttp.ClientSession, url: str) -> list[tuple[float, str]]:
    """Each line of one streamed chat completion, with the time it arrived."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    lines: list[tuple[float, str]] = []
    async with http.post(url + "/v1/chat/completions", json=body) as r:
        assert r.status == 200
        async for raw in r.content:
            if line := raw.decode().strip():
                lines.append((time.monotonic(), line))
    return lines


async def test_each_upstream_event_reaches_the_client_when_it_comes(
    sim: SimulatedServer,
) -> None:
    sim.set_default("openai", Fault.ok("one two", chunks=2, interval=INTERVAL))
    gpt = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY)
    agent = FallbackAgent([gpt], max_retries=0, retry_strategy="none")
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        streams = await asyncio.gather(*(_arrivals(http, url) for _ in range(STREAMS)))
    for lines in streams:
        assert lines[-1][1] == "data: [DONE]"
        last_text = max(i for i, (_, line) in enumerate(lines) if '"content":"' in line)
        pings = [i for i, (_, line) in enumerate(lines) if i > last_text and line[0] == ":"]
        assert pings, "nothing reached the client between the last text and the end"
        ping = pings[0]
        # The stop reason's comment came an interval before the usage let the end go out.
        assert lines[-1][0] - lines[ping][0] > INTERVAL / 3
        assert lines[ping][1] == ": keep-alive"


async def test_a_responses_stream_moves_with_the_upstream_and_its_sdk_reads_it(
    sim: SimulatedServer,
) -> None:
    # Responses-format streams had no keep-alive: a client heard nothing between the last
    # text and the end (nor during a tool call's arguments). An SSE comment is skipped by
    # every SSE parser (the spec's, openai-python's, the JS SDK's, Codex's): no event,
    # no sequence number.
    sim.set_default("openai", Fault.ok("one two", chunks=2, interval=INTERVAL))
    gpt = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY)
    agent = FallbackAgent([gpt], max_retries=0, retry_strategy="none")
    body = {"model": "m", "stream": True, "input": "hi"}
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        lines: list[tuple[float, str]] = []
        async with http.post(url + "/v1/responses", json=body) as r:
            assert r.status == 200
            async for raw in r.content:
                if line := raw.decode().strip():
                    lines.append((time.monotonic(), line))
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        stream = await client.responses.create(model="m", input="hi", stream=True)
        kinds = [event.type async for event in stream]
        await client.close()
    assert lines[-1][1].startswith("data: ") and '"response.completed"' in lines[-1][1]
    last_text = max(i for i, (_, line) in enumerate(lines) if "output_text.delta" in line)
    pings = [i for i, (_, line) in enumerate(lines) if i > last_text and line[0] == ":"]
    assert pings, "nothing reached the client between the last text and the end"
    assert lines[-1][0] - lines[pings[0]][0] > INTERVAL / 3
    assert lines[pings[0]][1] == ": keep-alive"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 2
