"""Tool calls in the engine: Result.tool_calls, validation, skipping providers without tools,
and streams that never continue a tool call half made."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError, Request, Response, Tool, ToolCall
from orchestrator.errors import InvalidOutput, StreamInterrupted, ToolsUnsupported
from orchestrator.tools import MAX_SCHEMA_DEPTH, check_tools
from orchestrator.types import ToolCallDelta
from tests.conftest import Scripted

WEATHER = Tool(
    "get_weather",
    "Current weather in a city",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def ask(tool_choice: str | None = None) -> Request:
    return Request("Weather in Paris?", tools=[WEATHER], tool_choice=tool_choice)


def calls(name: str = "get_weather", **arguments: Any) -> Response:
    return Response("", tool_calls=(ToolCall("call_1", name, arguments or {"city": "Paris"}),))


async def test_result_carries_the_winning_replys_tool_calls_and_empty_text() -> None:
    result = await FallbackAgent([Scripted("a", [calls()])]).run(ask())
    assert result.text == ""
    assert result.tool_calls == (ToolCall("call_1", "get_weather", {"city": "Paris"}),)


async def test_a_text_reply_to_a_request_with_tools_is_fine_under_auto() -> None:
    result = await FallbackAgent([Scripted("a", ["It is sunny."])]).run(ask())
    assert result.text == "It is sunny." and result.tool_calls == ()


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (calls("delete_everything"), "not offered"),
        (calls(city=3), "arguments do not match its schema at city: type"),
        (calls(town="Paris"), "check failed"),
    ],
)
async def test_bad_tool_calls_are_invalid_output_retried_then_handed_over(
    reply: Response, words: str
) -> None:
    a, b = Scripted("a", [reply]), Scripted("b", [calls()])
    result = await FallbackAgent([a, b], schema_retries=1, max_retries=3).run(ask())
    assert result.handled_by == "b"
    assert a.calls == 2  # the first try and one schema retry
    failed = result.failed_attempts
    assert [f.reason for f in failed] == ["invalid_output", "invalid_output"]
    assert isinstance(failed[0].error, InvalidOutput) and words in str(failed[0].error)
    assert "Paris" not in str(failed[0].error)  # names the path, never the values


async def test_tool_calls_when_none_were_offered_are_invalid_output() -> None:
    agent = FallbackAgent([Scripted("a", [calls()])], schema_retries=0)
    with pytest.raises(FallbackError) as info:
        await agent.run("hi")
    assert "not offered (offered: none)" in str(info.value.attempts[0].error)


@pytest.mark.parametrize(
    ("choice", "reply"),
    [("required", Response("text only")), ("none", calls()), ("get_weather", Response("no"))],
)
async def test_a_reply_that_ignores_tool_choice_is_invalid_output(
    choice: str, reply: Response
) -> None:
    agent = FallbackAgent([Scripted("a", [reply])], schema_retries=0)
    with pytest.raises(FallbackError) as info:
        await agent.run(ask(choice))
    assert isinstance(info.value.attempts[0].error, InvalidOutput)
    assert "tool_choice" in str(info.value.attempts[0].error)


class NoTools(Scripted):
    supports_tools = False


async def test_a_provider_that_cannot_take_tools_is_skipped_without_a_request() -> None:
    cli, b = NoTools("cli", ["unused"]), Scripted("b", [calls()])
    handed: list[tuple[str, str]] = []

    async def before(request: Request, reason: str) -> Request:
        handed.append((reason, request.tools[0].name))
        return request

    result = await FallbackAgent([cli, b], before_fallback=before).run(ask())
    assert cli.calls == 0 and result.handled_by == "b"
    first = result.attempts[0]
    assert (first.agent, first.attempt_number, first.reason) == ("cli", 0, "unsupported")
    assert isinstance(first.error, ToolsUnsupported)
    assert handed == [("unsupported", "get_weather")]  # hand-over hooks still run


async def test_a_provider_without_tools_still_serves_requests_without_tools() -> None:
    cli = NoTools("cli", ["plain"])
    result = await FallbackAgent([cli]).run("hi")
    assert result.text == "plain" and cli.calls == 1


async def test_every_provider_unable_to_take_tools_fails_without_any_request() -> None:
    a, b = NoTools("a", ["x"]), NoTools("b", ["y"])
    with pytest.raises(FallbackError) as info:
        await FallbackAgent([a, b]).run(ask())
    assert [x.reason for x in info.value.attempts] == ["unsupported", "unsupported"]
    assert a.calls == b.calls == 0


async def test_a_nested_chain_skips_its_own_children() -> None:
    inner = FallbackAgent([NoTools("cli", ["x"]), Scripted("b", [calls()])], name="inner")
    result = await FallbackAgent([inner]).run(ask())
    assert result.handled_by == "b" and result.tool_calls[0].name == "get_weather"


async def test_schema_is_not_applied_to_a_reply_that_calls_tools() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str

    result = await FallbackAgent([Scripted("a", [calls()])], schema_retries=0).run(
        ask(), schema=Answer
    )
    assert result.value is None and result.tool_calls


def test_a_bad_or_absurd_schema_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        check_tools([Tool("t", "", {"type": "object", "properties": {"a": {"type": 5}}})])
    deep: dict[str, Any] = {"type": "object"}
    node = deep
    for _ in range(MAX_SCHEMA_DEPTH):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    with pytest.raises(ValueError, match="too large"):
        check_tools([Tool("deep", "", deep)])
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(6000)}}
    with pytest.raises(ValueError, match="too large"):
        check_tools([Tool("wide", "", wide)])


async def test_a_bad_schema_fails_the_run_before_any_call() -> None:
    a = Scripted("a", ["x"])
    bad = Tool("t", "", {"type": "object", "required": "city"})
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        await FallbackAgent([a]).run(Request("hi", tools=[bad]))
    assert a.calls == 0


async def test_a_hundred_tool_runs_in_flight() -> None:
    class Echo:
        name = "echo"

        async def complete(self, request: Request) -> Response:
            await asyncio.sleep(0)
            city = request.prompt
            return Response("", tool_calls=(ToolCall("c", "get_weather", {"city": city}),))

    agent = FallbackAgent([Echo()])
    results = await asyncio.gather(
        *(agent.run(Request(f"c{i}", tools=[WEATHER])) for i in range(100))
    )
    assert [r.tool_calls[0].arguments["city"] for r in results] == [f"c{i}" for i in range(100)]


# -- streams ---------------------------------------------------------------------------


class Streamer:
    """Yields ``items`` (str, ToolCallDelta), then ``end`` (a Response or an exception)."""

    def __init__(self, name: str, items: list[Any], end: Response | Exception) -> None:
        self.name, self.items, self.end = name, items, end
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        raise AssertionError("streamed only")

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        self.requests.append(request)
        for item in self.items:
            yield item
        if isinstance(self.end, Exception):
            raise self.end
        yield self.end


DELTAS = [ToolCallDelta(0, "call_1", "get_weather"), ToolCallDelta(0, arguments='{"city":')]


async def stream_all(agent: FallbackAgent, **kw: Any) -> tuple[list[Any], Any]:
    seen: list[Any] = []
    async with agent.stream(ask(), **kw) as s:
        async for chunk in s:
            seen.append(chunk)
    return seen, s.result


async def test_tool_call_deltas_never_reach_the_text_stream() -> None:
    final = calls()
    a = Streamer("a", ["Let me look.", *DELTAS, ToolCallDelta(0, arguments='"Paris"}')], final)
    seen, result = await stream_all(FallbackAgent([a]))
    assert seen == ["Let me look."]
    assert result.text == "Let me look." and result.tool_calls == final.tool_calls


async def test_a_cut_inside_a_tool_call_after_text_is_never_continued() -> None:
    a = Streamer("a", ["Let me look.", *DELTAS], StreamInterrupted("cut"))
    b = Streamer("b", ["unused"], Response("unused"))
    seen: list[Any] = []
    with pytest.raises(StreamInterrupted):
        async with FallbackAgent([a, b], max_retries=2).stream(ask(), mid_stream="continue") as s:
            async for chunk in s:
                seen.append(chunk)
    assert seen == ["Let me look."] and b.requests == []
    assert len(a.requests) == 1  # not retried either


async def test_a_cut_inside_a_tool_call_before_any_text_starts_over_elsewhere() -> None:
    a = Streamer("a", DELTAS, StreamInterrupted("cut"))
    b = Streamer("b", DELTAS, calls())
    seen, result = await stream_all(FallbackAgent([a, b], max_retries=0), mid_stream="continue")
    assert seen == [] and result.handled_by == "b" and result.tool_calls
    assert [m.role for m in b.requests[0].messages] == ["user"]  # no prefix: a fresh start


async def test_text_is_still_continued_when_no_tool_call_started() -> None:
    a = Streamer("a", ["Hel"], StreamInterrupted("cut"))
    b = Streamer("b", ["lo"], Response("lo"))
    seen, result = await stream_all(FallbackAgent([a, b], max_retries=0), mid_stream="continue")
    assert seen == ["Hel", "lo"] and result.text == "Hello"
    assert b.requests[0].messages[-1].content == "Hel"


async def test_a_schema_that_cannot_be_applied_stops_the_run_as_invalid_request() -> None:
    from orchestrator.errors import InvalidRequest

    # A local reference to itself: valid when built, endless when applied (RecursionError).
    loop = {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}
    remote = Tool("t", "", loop)
    a, b = (
        Scripted("a", [Response("", tool_calls=(ToolCall("c", "t", {"a": 1}),))]),
        Scripted("b", ["x"]),
    )
    with pytest.raises(InvalidRequest, match="cannot be applied"):
        await FallbackAgent([a, b]).run(Request("hi", tools=[remote]))
    assert b.calls == 0  # the request's fault: no other provider would do better
