"""Tool calls from a hostile server against the tool's schema: checking them stays linear."""

from __future__ import annotations

import time

import pytest

from orchestrator import FallbackAgent, Request, Response, Tool, ToolCall
from orchestrator.tools import check_tools, tool_call_error

#: A textbook catastrophic-backtracking pattern: a backtracking engine takes 2^n steps
#: on "a" * n + "!" (n = 30 is minutes under Python's ``re``).
EVIL = Tool(
    "f",
    "",
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}},
)


def _call(value: str) -> ToolCall:
    return ToolCall("call_1", "f", {"s": value})


def test_a_catastrophic_pattern_checks_hostile_arguments_in_linear_time() -> None:
    request = Request("hi", tools=[EVIL])
    started = time.perf_counter()
    error = tool_call_error(request, [_call("a" * 10_000 + "!")], "p")
    assert time.perf_counter() - started < 2.0  # generous: linear time is ~milliseconds
    assert error is not None and "at s: pattern check failed" in str(error)
    assert tool_call_error(request, [_call("aaaa")], "p") is None


async def test_a_run_on_a_catastrophic_pattern_falls_over_promptly() -> None:
    from tests.conftest import Scripted

    bad = Response("", tool_calls=(_call("a" * 64 + "!"),))
    good = Response("", tool_calls=(_call("aaa"),))
    agent = FallbackAgent([Scripted("a", [bad, bad, bad]), Scripted("b", [good])])
    started = time.perf_counter()
    result = await agent.run(Request("hi", tools=[EVIL]))
    assert time.perf_counter() - started < 5.0
    assert result.handled_by == "b" and result.tool_calls == (_call("aaa"),)


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "string", "pattern": "^(?=a)a$"}, "no linear-time match"),  # lookahead
        ({"type": "string", "pattern": "^(a)\\1$"}, "no linear-time match"),  # backreference
        ({"type": "string", "pattern": "("}, "no linear-time match"),
    ],
)
def test_a_pattern_without_a_linear_time_match_is_refused_before_anything_is_sent(
    schema: dict[str, object], words: str
) -> None:
    tool = Tool("g", "", {"type": "object", "properties": {"s": schema}})
    with pytest.raises(ValueError, match=words):
        check_tools([tool])


def test_pattern_properties_are_refused_before_anything_is_sent() -> None:
    tool = Tool("h", "", {"type": "object", "patternProperties": {"^(a+)+$": {}}})
    with pytest.raises(ValueError, match="patternProperties"):
        check_tools([tool])


def test_properties_named_like_regex_keywords_are_properties() -> None:
    props = {"pattern": {"type": "string"}, "patternProperties": {"type": "string"}}
    tool = Tool("k", "", {"type": "object", "properties": props})
    check_tools([tool])
    assert (
        tool_call_error(Request("hi", tools=[tool]), [ToolCall("1", "k", {"pattern": "x"})], "p")
        is None
    )


PLAIN = Tool("f", "", {"type": "object", "properties": {"s": {"type": "string"}}})


def test_a_reply_with_two_calls_under_one_id_is_invalid_output() -> None:
    """The caller answers each call by its id: two calls under one id cannot both be
    answered (Anthropic refuses such a history: the next turn would fail)."""
    twice = [ToolCall("call_1", "f", {"s": "a"}), ToolCall("call_1", "f", {"s": "b"})]
    error = tool_call_error(Request("hi", tools=[PLAIN]), twice, "p")
    assert error is not None and "more than one call with id 'call_1'" in str(error)
    distinct = [ToolCall("call_1", "f", {"s": "a"}), ToolCall("call_2", "f", {"s": "b"})]
    assert tool_call_error(Request("hi", tools=[PLAIN]), distinct, "p") is None


def test_a_hostile_tool_name_or_id_is_bounded_in_the_error() -> None:
    request = Request("hi", tools=[PLAIN])
    name = "x" * 100_000 + "\x1b[2J"
    error = tool_call_error(request, [ToolCall("call_1", name, {})], "p")
    assert error is not None and len(str(error)) < 1_000 and "\x1b" not in str(error)
    twice = [ToolCall("i" * 100_000, "f", {}), ToolCall("i" * 100_000, "f", {})]
    error = tool_call_error(request, twice, "p")
    assert error is not None and len(str(error)) < 1_000
