"""The documented agent loop (docs/tools.md), unchanged, falling over OpenAI -> Anthropic -> Gemini mid-loop
against the simulated server over loopback; and tool runs under concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import Request
from providers.simulator import Fault, SimulatedServer
from tests.doc_pages import Block, section_code


def readme_loop() -> Block:
    """The first Python block under the "Tools and agent loops" heading (docs/tools.md)."""
    return section_code("Tools and agent loops")


@pytest.fixture
def loop(sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The snippet's namespace, its providers pointed at the simulator."""
    for var, value in {
        "OPENAI_BASE_URL": sim.openai_url,
        "ANTHROPIC_BASE_URL": sim.anthropic_url,
        "GEMINI_BASE_URL": sim.gemini_url,
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "GEMINI_API_KEY": "g-test",
    }.items():
        monkeypatch.setenv(var, value)
    namespace: dict[str, Any] = {"__name__": "readme_tools"}
    block = readme_loop()
    exec(compile(block.text, block.where, "exec"), namespace)
    return namespace


def paris(city: str = "Paris") -> Fault:
    return Fault.ok(tool_calls=[{"name": "get_weather", "arguments": {"city": city}}])


async def test_the_readme_loop_falls_over_between_vendors_mid_loop(
    sim: SimulatedServer, loop: dict[str, Any]
) -> None:
    sim.script("openai", [paris(), Fault.quota(), Fault.quota()])
    sim.script("anthropic", [paris("Oslo"), Fault.quota()])
    sim.script("gemini", [Fault.ok("Paris and Oslo: 18 C.")])
    assert await loop["ask"]("Weather in Paris and Oslo?") == "Paris and Oslo: 18 C."
    assert (sim.count("openai"), sim.count("anthropic"), sim.count("gemini")) == (3, 2, 1)

    # Anthropic got OpenAI's call back as tool_use and its result as a tool_result block.
    claude = sim.requests("anthropic")[0]["body"]["messages"]
    first_id = claude[1]["content"][0]["id"]
    assert first_id.startswith("call_sim")  # the id OpenAI gave
    assert claude[2]["content"][0]["tool_use_id"] == first_id
    # Gemini got both calls as functionCall parts and the results under the function's name.
    turns = sim.requests("gemini")[0]["body"]["contents"]
    assert [next(iter(p)) for t in turns for p in t["parts"]] == [
        "text",
        "functionCall",
        "functionResponse",
        "functionCall",
        "functionResponse",
    ]
    assert turns[4]["parts"][0]["functionResponse"] == {
        "name": "get_weather",
        "response": {"city": "Oslo", "temp_c": 18},
    }
    assert sim.tools("gemini") == [["get_weather"]]


async def test_the_same_loop_streamed_falls_over_too(
    sim: SimulatedServer, loop: dict[str, Any]
) -> None:
    from orchestrator import Message

    agent, tools = loop["agent"], [loop["WEATHER"]]
    cut = Fault.cut_stream(0, tool_calls=[{"name": "get_weather", "arguments": {"city": "X"}}])
    sim.script("openai", [paris(), Fault.quota(), cut, Fault.ok("Done.", chunks=2)])
    sim.script("anthropic", [paris("Oslo")])
    messages: list[Any] = [Message("user", "Weather in Paris and Oslo?")]
    seen: list[str] = []
    for _ in range(3):
        async with agent.stream(Request(messages=messages, tools=tools)) as s:
            seen += [chunk async for chunk in s]
        result = s.result
        if not result.tool_calls:
            break
        messages.append(Message("assistant", result.text, tool_calls=result.tool_calls))
        for call in result.tool_calls:
            messages.append(Message("tool", "18 C", tool_call_id=call.id))
    assert seen == ["Don", "e."] and result.text == "Done." and result.tool_calls == ()
    # The third turn's stream was cut inside a tool call before any text: it started over
    # (a retry here), the half-made call never surfacing.
    assert [type(a.error).__name__ for a in result.failed_attempts] == ["StreamInterrupted"]
    assert sim.count("anthropic") == 1 and sim.count("gemini") == 0


async def test_a_hundred_tool_runs_in_flight_fall_over_with_their_tools(
    sim: SimulatedServer, loop: dict[str, Any]
) -> None:
    sim.set_default("openai", Fault.quota())
    sim.set_default("anthropic", paris())
    agent, tools = loop["agent"], [loop["WEATHER"]]
    results = await asyncio.gather(*(agent.run(Request(f"q{i}", tools=tools)) for i in range(100)))
    assert all(r.tool_calls[0].arguments == {"city": "Paris"} for r in results)
    assert sim.tools("anthropic") == [["get_weather"]] * 100 and sim.count("gemini") == 0
