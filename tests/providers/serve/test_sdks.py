"""The official openai and anthropic SDKs against the gateway, in front of the simulator,
the chain falling over from the simulated Anthropic route (529) to the OpenAI route."""

from __future__ import annotations

import json

import anthropic
import openai

from orchestrator import FallbackAgent, Response, ToolCall, Usage
from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import Recorder, fallback, gateway

KEY = "gw-sdk-key"


async def test_openai_sdk_chat_and_stream_through_the_fallback(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", Fault.status(529))
    async with gateway({"review": fallback(sim)}) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        raw = await client.chat.completions.with_raw_response.create(
            model="review", messages=[{"role": "user", "content": "hello"}]
        )
        completion = raw.parse()
        assert raw.headers["x-failover-handled-by"] == "openai:gpt-sim"
        assert completion.choices[0].message.content
        stream = await client.chat.completions.create(
            model="review",
            messages=[{"role": "user", "content": "hello"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        parts, usage = [], None
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
            usage = chunk.usage or usage
        assert "".join(parts) == completion.choices[0].message.content
        assert usage is not None
        models = await client.models.list()
        assert [m.id for m in models.data] == ["review"]
        await client.close()
    assert sim.count("anthropic") == 2 and sim.count("openai") == 2


async def test_openai_sdk_tools() -> None:
    call = ToolCall("call_9", "lookup", {"q": "x"})
    agent = FallbackAgent([Recorder(Response("", tool_calls=(call,), usage=Usage(1, 1)))])
    tools = [
        {
            "type": "function",
            "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    async with gateway({"m": agent}) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        out = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "find x"}],
            tools=tools,  # type: ignore[arg-type]
        )
        (got,) = out.choices[0].message.tool_calls or []
        assert got.function.name == "lookup" and json.loads(got.function.arguments) == {"q": "x"}
        stream = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "find x"}],
            tools=tools,
            stream=True,  # type: ignore[arg-type]
        )
        names = [
            tc.function.name
            async for c in stream
            if c.choices and c.choices[0].delta.tool_calls
            for tc in c.choices[0].delta.tool_calls
            if tc.function
        ]
        assert names == ["lookup"]
        await client.close()


async def test_anthropic_sdk_messages_stream_tools_and_count(sim: SimulatedServer) -> None:
    sim.set_default("anthropic", Fault.status(529))
    call = ToolCall("toolu_9", "lookup", {"q": "y"})
    tools_agent = FallbackAgent([Recorder(Response("ok", tool_calls=(call,)))])
    async with gateway({"review": fallback(sim), "tools": tools_agent}) as url:
        client = anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0)
        message = await client.messages.create(
            model="review", max_tokens=50, messages=[{"role": "user", "content": "hello"}]
        )
        assert message.content[0].type == "text" and message.content[0].text
        async with client.messages.stream(
            model="review", max_tokens=50, messages=[{"role": "user", "content": "hello"}]
        ) as stream:
            text = "".join([t async for t in stream.text_stream])
            final = await stream.get_final_message()
        assert text == message.content[0].text and final.stop_reason == "end_turn"
        tools = [{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}]
        used = await client.messages.create(
            model="tools",
            max_tokens=50,
            tools=tools,
            messages=[{"role": "user", "content": "?"}],  # type: ignore[arg-type]
        )
        assert used.stop_reason == "tool_use"
        assert used.content[1].type == "tool_use" and used.content[1].input == {"q": "y"}
        async with client.messages.stream(
            model="tools",
            max_tokens=50,
            tools=tools,
            messages=[{"role": "user", "content": "?"}],  # type: ignore[arg-type]
        ) as stream:
            streamed = await stream.get_final_message()
        assert streamed.content[1].type == "tool_use" and streamed.content[1].input == {"q": "y"}
        counted = await client.messages.count_tokens(
            model="review", messages=[{"role": "user", "content": "hello there"}]
        )
        assert counted.input_tokens >= 3
        try:
            await client.messages.create(
                model="nope", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        except anthropic.NotFoundError as exc:
            assert "review" in str(exc)
        else:
            raise AssertionError("an unknown model must be a 404")
        await client.close()
