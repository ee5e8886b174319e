"""The gateway serving issue 11's chains: deadlines and hedging under a client's SSE stream, and a
tool loop with the official openai SDK falling over from Anthropic (529) to OpenAI."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import openai
import pytest

from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import fallback, gateway

SECONDARY = "the secondary's whole reply"


async def _streamed_text(url: str) -> tuple[str, list[str]]:
    """The text of a streamed chat completion, and every SSE data line."""
    payload = {
        "model": "review",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    lines: list[str] = []
    async with (
        aiohttp.ClientSession() as http,
        http.post(url + "/v1/chat/completions", json=payload) as r,
    ):
        assert r.status == 200 and r.content_type == "text/event-stream"
        async for raw in r.content:
            line = raw.decode().strip()
            if line.startswith("data: "):
                lines.append(line[6:])
    chunks = [json.loads(d) for d in lines if d != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    return text, lines


@pytest.mark.parametrize(
    "deadline",
    [{"first_token_timeout": 0.5}, {"hedge_after": 0.3}],
    ids=["first_token_timeout", "hedge_after"],
)
async def test_a_silent_primary_is_left_and_the_stream_gets_the_secondary_once(
    sim: SimulatedServer, deadline: dict[str, Any]
) -> None:
    # Headers at once, then no token for 30 s: only a deadline or a hedge gets past it.
    sim.set_default("anthropic", Fault.first_token(30.0, then=Fault.ok("the primary, too late")))
    sim.set_default("openai", Fault.ok(SECONDARY, chunks=4))
    async with gateway({"review": fallback(sim, **deadline)}) as url:
        text, lines = await _streamed_text(url)
    assert text == SECONDARY  # whole, once, nothing of the primary
    assert lines[-1] == "[DONE]"
    assert sim.count("anthropic") == 1 and sim.count("openai") == 1


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
        },
    }
]


async def test_openai_sdk_tool_loop_falls_over_from_anthropic_to_openai(
    sim: SimulatedServer,
) -> None:
    sim.set_default("anthropic", Fault.overloaded())
    sim.script(
        "openai",
        [Fault.ok(tool_calls=[{"name": "lookup", "arguments": {"q": "gateway"}}]), Fault.ok("42")],
    )
    async with gateway({"review": fallback(sim)}) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="gw-key", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "what is the gateway?"}]
        first = await client.chat.completions.create(model="review", messages=messages, tools=TOOLS)
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        (call,) = choice.message.tool_calls or []
        assert call.function.name == "lookup" and json.loads(call.function.arguments) == {
            "q": "gateway"
        }
        messages += [
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "a failover gateway"},
        ]
        second = await client.chat.completions.create(
            model="review", messages=messages, tools=TOOLS
        )
        assert second.choices[0].message.content == "42"
        await client.close()
    # Each vendor saw the tool in its own format, the history translated both ways.
    assert sim.tools("anthropic") == [["lookup"], ["lookup"]]
    assert sim.tools("openai") == [["lookup"], ["lookup"]]
    history = sim.requests("anthropic")[1]["body"]["messages"]
    kinds = [[b["type"] for b in m["content"]] for m in history if isinstance(m["content"], list)]
    assert ["tool_use"] in kinds and ["tool_result"] in kinds
    replayed = sim.requests("openai")[1]["body"]["messages"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool"]
    assert replayed[1]["tool_calls"][0]["id"] == replayed[2]["tool_call_id"] == call.id
