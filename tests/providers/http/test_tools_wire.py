"""Tools on each vendor's wire, both ways, plain and streamed, over loopback to the simulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator import Message, Request, Response, Tool, ToolCall
from orchestrator.errors import InvalidOutput, InvalidRequest
from orchestrator.types import ToolCallDelta
from providers import AnthropicMessages, GeminiGenerate, OpenAIChat
from providers.http.base import VendorProvider
from providers.simulator import Fault, SimulatedServer

WEATHER = Tool(
    "get_weather",
    "Current weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = Tool("get_time", "Current time", {"type": "object", "properties": {}})
ROUTES = ("openai", "anthropic", "gemini")
SCRIPTED = [
    {"name": "get_weather", "arguments": {"city": "Paris"}},
    {"name": "get_weather", "arguments": {"city": "Oslo"}},
]


def provider(route: str, sim: SimulatedServer, **kw: Any) -> VendorProvider:
    if route == "openai":
        return OpenAIChat("gpt-4o-mini", base_url=sim.openai_url, api_key="sk-test", **kw)
    if route == "anthropic":
        return AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key="sk-test", **kw)
    return GeminiGenerate("gemini-2.5-flash", base_url=sim.gemini_url, api_key="k-test", **kw)


def ask(**kw: Any) -> Request:
    return Request("Weather in Paris and Oslo?", tools=[WEATHER, TIME], **kw)


async def streamed(p: VendorProvider, request: Request) -> tuple[list[Any], Response]:
    items = [item async for item in p.stream(request)]  # type: ignore[attr-defined]
    assert isinstance(items[-1], Response)
    return items[:-1], items[-1]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_come_back_assembled(
    sim: SimulatedServer, route: str, stream: bool
) -> None:
    sim.script(route, [Fault.ok(tool_calls=SCRIPTED)])
    p = provider(route, sim)
    if stream:
        items, response = await streamed(p, ask())
        deltas = [i for i in items if isinstance(i, ToolCallDelta)]
        assert {d.index for d in deltas} == {0, 1}
        assert all(isinstance(i, ToolCallDelta) for i in items if i)
    else:
        response = await p.complete(ask())
    assert response.text == ""
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert sim.tools(route) == [["get_weather", "get_time"]]


@pytest.mark.parametrize("route", ROUTES)
async def test_text_and_a_tool_call_in_one_reply(sim: SimulatedServer, route: str) -> None:
    sim.script(route, [Fault.ok("Let me check.", tool_calls=SCRIPTED[:1])] * 2)
    p = provider(route, sim)
    plain = await p.complete(ask())
    items, final = await streamed(p, ask())
    for response in (plain, final):
        assert response.text == "Let me check." and len(response.tool_calls) == 1
    assert "".join(i for i in items if isinstance(i, str)) == "Let me check."


@pytest.mark.parametrize("route", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
async def test_arguments_that_are_not_json_are_invalid_output(
    sim: SimulatedServer, route: str, stream: bool
) -> None:
    sim.script(route, [Fault.ok(tool_calls=[{"name": "get_weather", "arguments": '{"city": '}])])
    p = provider(route, sim)
    with pytest.raises(InvalidOutput, match=r"get_weather.* not a JSON object") as info:
        if stream:
            await streamed(p, ask())
        else:
            await p.complete(ask())
    assert "city" not in str(info.value)


def history() -> list[Message]:
    calls = (
        ToolCall("call_a", "get_weather", {"city": "Paris"}),
        ToolCall("call_b", "get_weather", {"city": "Oslo"}),
    )
    return [
        Message("user", "Weather in Paris and Oslo?"),
        Message("assistant", "", tool_calls=calls),
        Message("tool", "18C sunny", tool_call_id="call_a"),
        Message("tool", '{"temp": 4}', tool_call_id="call_b"),
    ]


EXPECTED_HISTORY: dict[str, Any] = {
    "openai": [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "18C sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": '{"temp": 4}'},
    ],
    "anthropic": [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_a",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "call_b",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "18C sunny"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": '{"temp": 4}'},
            ],
        },
    ],
    "gemini": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "18C sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"temp": 4}}},
            ],
        },
    ],
}
HISTORY_KEY = {"openai": "messages", "anthropic": "messages", "gemini": "contents"}


@pytest.mark.parametrize("route", ROUTES)
async def test_history_with_tool_calls_and_results_goes_out_in_the_vendors_shape(
    sim: SimulatedServer, route: str
) -> None:
    await provider(route, sim).complete(Request(messages=history(), tools=[WEATHER]))
    body = sim.requests(route)[0]["body"]
    assert body[HISTORY_KEY[route]] == EXPECTED_HISTORY[route]


EXPECTED_TOOLS: dict[str, Any] = {
    "openai": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": dict(WEATHER.parameters),
                "description": "Current weather in a city",
            },
        }
    ],
    "anthropic": [
        {
            "name": "get_weather",
            "description": "Current weather in a city",
            "input_schema": dict(WEATHER.parameters),
        }
    ],
    "gemini": [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather in a city",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"city": {"type": "STRING"}},
                        "required": ["city"],
                    },
                }
            ]
        }
    ],
}
CHOICES: dict[str, dict[str, Any]] = {
    "openai": {
        "auto": "auto",
        "required": "required",
        "none": "none",
        "get_weather": {"type": "function", "function": {"name": "get_weather"}},
    },
    "anthropic": {
        "auto": {"type": "auto"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "get_weather": {"type": "tool", "name": "get_weather"},
    },
    "gemini": {
        "auto": {"functionCallingConfig": {"mode": "AUTO"}},
        "required": {"functionCallingConfig": {"mode": "ANY"}},
        "none": {"functionCallingConfig": {"mode": "NONE"}},
        "get_weather": {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
        },
    },
}


@pytest.mark.parametrize("route", ROUTES)
async def test_tools_and_tool_choice_in_the_vendors_shape(sim: SimulatedServer, route: str) -> None:
    p = provider(route, sim)
    for choice in ("auto", "required", "none", "get_weather"):
        await p.complete(Request("hi", tools=[WEATHER], tool_choice=choice))
    bodies = [r["body"] for r in sim.requests(route)]
    assert bodies[0]["tools"] == EXPECTED_TOOLS[route]
    key = "toolConfig" if route == "gemini" else "tool_choice"
    assert [b[key] for b in bodies] == list(CHOICES[route].values())


async def test_gemini_made_up_ids_are_unique_and_stable(sim: SimulatedServer) -> None:
    sim.script("gemini", [Fault.ok(tool_calls=SCRIPTED)] * 2)
    p = provider("gemini", sim)
    first, again = await p.complete(ask()), await p.complete(ask())
    ids = [c.id for c in first.tool_calls]
    assert len(set(ids)) == 2 and ids == [c.id for c in again.tool_calls]


async def test_gemini_needs_the_call_a_result_answers(sim: SimulatedServer) -> None:
    orphan = [Message("user", "hi"), Message("tool", "18C", tool_call_id="call_zz")]
    with pytest.raises(InvalidRequest, match="call_zz"):
        await provider("gemini", sim).complete(Request(messages=orphan, tools=[WEATHER]))
    assert sim.count("gemini") == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_structured_output_and_tools_coexist(
    sim: SimulatedServer, stream: bool
) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    p = provider("anthropic", sim)
    request = ask(json_schema=schema, schema_name="get_weather")  # a clashing name
    sim.script("anthropic", [Fault.ok(tool_calls=SCRIPTED[:1]), Fault.ok('{"answer": "warm"}')])
    for expect_call in (True, False):
        response = (await streamed(p, request))[1] if stream else await p.complete(request)
        if expect_call:
            assert response.tool_calls[0].name == "get_weather" and response.text == ""
        else:
            assert response.tool_calls == () and json.loads(response.text) == {"answer": "warm"}
    body = sim.requests("anthropic")[0]["body"]
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_time", "get_weather_out"]
    assert body["tool_choice"] == {"type": "any"}


async def test_a_stream_cut_inside_a_tool_call_is_interrupted(sim: SimulatedServer) -> None:
    from orchestrator.errors import StreamInterrupted

    for route in ("openai", "anthropic"):
        sim.script(route, [Fault.cut_stream(0, tool_calls=SCRIPTED)])
        items: list[Any] = []
        with pytest.raises(StreamInterrupted):
            async for item in provider(route, sim).stream(ask()):  # type: ignore[attr-defined]
                items.append(item)
        assert [type(i) for i in items if i] == [ToolCallDelta, ToolCallDelta]


async def test_http_fallback_without_declared_support_is_skipped_cli_agents_too(
    sim: SimulatedServer,
) -> None:
    from orchestrator import FallbackAgent
    from providers import CLIAgent, HTTPFallback

    sim.script("openai", [Fault.ok(tool_calls=SCRIPTED[:1])])
    cli = CLIAgent(["sh", "-c", "echo started > /dev/stderr; exit 1"], name="cli")
    agent = FallbackAgent([HTTPFallback(sim.http_url), cli, provider("openai", sim)])
    result = await agent.run(ask())
    assert [(a.agent, a.reason) for a in result.failed_attempts] == [
        (f"http:127.0.0.1:{sim.port}", "unsupported"),
        ("cli", "unsupported"),
    ]
    assert sim.count("http") == 0 and result.tool_calls[0].arguments == {"city": "Paris"}


async def test_http_fallback_with_declared_support_sends_tools_and_reads_calls(
    sim: SimulatedServer,
) -> None:
    from providers import HTTPFallback

    sim.script("http", [Fault.ok(tool_calls=SCRIPTED[:1])])
    response = await HTTPFallback(sim.http_url, supports_tools=True).complete(
        Request(messages=history(), tools=[WEATHER], tool_choice="auto")
    )
    assert response.tool_calls[0].name == "get_weather"
    body = sim.requests("http")[0]["body"]
    assert sim.tools("http") == [["get_weather"]] and body["tool_choice"] == "auto"
    assert body["messages"][1]["tool_calls"][0] == {
        "id": "call_a",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    assert body["messages"][2]["tool_call_id"] == "call_a"


def test_the_chain_file_declares_tool_support_for_an_http_provider(tmp_path: Any) -> None:
    from orchestrator.config import load_config

    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  plain: {type: http, url: 'http://127.0.0.1:9/complete'}\n"
        "  tools: {type: http, url: 'http://127.0.0.1:9/complete', supports_tools: true}\n"
        "agents:\n"
        "  main: {providers: [plain, tools]}\n"
    )
    providers = load_config(path, environ={}).providers
    assert (providers["plain"].supports_tools, providers["tools"].supports_tools) == (False, True)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
async def test_more_tool_calls_than_a_reply_can_hold_is_invalid_output(
    sim: SimulatedServer, route: str, stream: bool
) -> None:
    many = [{"name": "get_time", "arguments": {}}] * 129
    sim.script(route, [Fault.ok(tool_calls=many)])
    p = provider(route, sim)
    with pytest.raises(InvalidOutput, match="128"):
        if stream:
            await streamed(p, ask())
        else:
            await p.complete(ask())


# -- a whole reply's tool-use blocks: Anthropic's tool_use and Bedrock's toolUse, one rule --


def _blocks(wire: str, *uses: tuple[str, Any]) -> Any:
    """A whole reply with text "hi" and one tool-use block per (name, input), on ``wire``."""
    if wire == "anthropic":
        content: list[Any] = [{"type": "text", "text": "hi"}]
        content += [
            {"type": "tool_use", "id": f"t{i}", "name": n, "input": v}
            for i, (n, v) in enumerate(uses)
        ]
        return {"content": content, "stop_reason": "tool_use"}
    content = [{"text": "hi"}]
    content += [
        {"toolUse": {"toolUseId": f"t{i}", "name": n, "input": v}} for i, (n, v) in enumerate(uses)
    ]
    return {"output": {"message": {"content": content}}, "stopReason": "tool_use"}


def _read(wire: str, data: Any, answer: str | None) -> tuple[str, tuple[ToolCall, ...]]:
    if wire == "anthropic":
        from providers.anthropic import _Prefill

        claude = AnthropicMessages("claude-sim", api_key="sk-test")
        reply = claude.parsed(claude.parse, data, answer, _Prefill(""))
        return reply.text, reply.tool_calls
    from providers import BedrockConverse
    from providers.bedrock.converse import read_reply

    return BedrockConverse("m", region="us-east-1").parsed(read_reply, data, answer)


@pytest.mark.parametrize("wire", ["anthropic", "bedrock"])
def test_both_tool_use_wires_read_the_structured_answer_by_one_rule(wire: str) -> None:
    """The answer tool's first input is the answer, other blocks are calls; an input of
    null is no answer (Anthropic read it as the answer "null", Bedrock as none)."""
    city = ("get_weather", {"city": "Oslo"})
    text, calls = _read(
        wire, _blocks(wire, ("Answer", {"a": 1}), ("Answer", {"a": 2}), city), "Answer"
    )
    assert json.loads(text) == {"a": 1} and calls == (
        ToolCall("t2", "get_weather", {"city": "Oslo"}),
    )
    assert _read(wire, _blocks(wire, city), None)[0] == "hi"
    assert _read(wire, _blocks(wire, ("Answer", None), city), "Answer")[0] == "hi"
    block = "tool_use" if wire == "anthropic" else "toolUse"
    with pytest.raises(InvalidOutput, match=f"no {block} block with an input"):
        _read(wire, _blocks(wire, ("Answer", None)), "Answer")
