"""``POST /v1/responses`` (what Codex speaks) over loopback HTTP, and the openai SDK on it."""

from __future__ import annotations

import json

import aiohttp
import openai

from orchestrator import FallbackAgent, Response, ToolCall, Usage
from providers import Fault, SimulatedServer
from tests.providers.serve import conftest
from tests.providers.serve.conftest import Recorder, fallback, gateway

RESPONSES = "/v1/responses"


def events(raw: str) -> list[dict[str, object]]:
    """Each event's data; a block of comments alone (a keep-alive) is no event (SSE spec)."""
    blocks = raw.strip().split("\n\n")
    return [json.loads(b.split("data: ", 1)[1]) for b in blocks if not b.startswith(":")]


async def test_json_and_stream_through_the_fallback(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", Fault.status(529))
    request = {"model": "review", "instructions": "be brief", "input": "hello"}
    async with gateway({"review": fallback(sim)}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + RESPONSES, json=request) as r:
            reply = await r.json()
            assert r.status == 200 and r.headers["x-failover-handled-by"] == "openai:gpt-sim"
        async with http.post(url + RESPONSES, json={**request, "stream": True}) as r:
            raw = (await r.read()).decode()
    assert reply["object"] == "response" and reply["status"] == "completed"
    text = reply["output"][0]["content"][0]["text"]
    assert text
    seq = events(raw)
    assert seq[0]["type"] == "response.created" and seq[-1]["type"] == "response.completed"
    deltas = "".join(str(e["delta"]) for e in seq if e["type"] == "response.output_text.delta")
    assert deltas == text
    assert [e["sequence_number"] for e in seq] == list(range(1, len(seq) + 1))


async def test_function_calls_both_ways() -> None:
    call = ToolCall("call_7", "exec_command", {"cmd": "ls"})
    fn = Recorder(Response("", tool_calls=(call,), usage=Usage(4, 2)))
    request = {
        "model": "m",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "rules"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "list"}],
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
            {
                "type": "function_call",
                "call_id": "call_6",
                "name": "exec_command",
                "arguments": '{"cmd":"pwd"}',
            },
            {"type": "function_call_output", "call_id": "call_6", "output": "/tmp"},
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
            {"type": "web_search"},
        ],
        "tool_choice": "auto",
    }
    reply, raw = await conftest.whole_and_streamed({"m": FallbackAgent([fn])}, RESPONSES, request)
    sent = fn.requests[0]
    assert sent.system == "rules"
    assert [m.role for m in sent.messages] == ["user", "assistant", "tool"]
    assert sent.messages[1].tool_calls[0].arguments == {"cmd": "pwd"}
    assert [t.name for t in sent.tools] == ["exec_command"]
    (item,) = reply["output"]
    assert item["type"] == "function_call" and item["call_id"] == "call_7"
    assert json.loads(item["arguments"]) == {"cmd": "ls"}
    final = events(raw)[-1]["response"]
    assert final["output"][0]["name"] == "exec_command"  # type: ignore[index]


async def test_the_openai_sdk_reads_it(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", Fault.status(529))
    async with gateway({"review": fallback(sim)}) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        whole = await client.responses.create(model="review", input="hello")
        assert whole.output_text
        stream = await client.responses.create(model="review", input="hello", stream=True)
        parts = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        assert "".join(parts) == whole.output_text
        await client.close()
