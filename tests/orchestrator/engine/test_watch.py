"""Deadlines inside a call: first_token_timeout and idle_timeout (fake time)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from orchestrator import (
    PROGRESS,
    FallbackAgent,
    FallbackError,
    Request,
    Response,
    Tool,
    ToolCall,
    ToolCallDelta,
)
from orchestrator.engine.deadlines import DEFAULT_IDLE_TIMEOUT, Watch, Watched
from orchestrator.errors import FirstTokenTimeout, ProviderTimeout, StreamStalled
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.conftest import Scripted
from tests.orchestrator.engine.paced import HANG, Paced, Ticker

FAST = [(0.01, "he"), (0.02, "llo")]


def near(value: float, expected: float, slack: float = 0.01) -> bool:
    return expected <= value <= expected + slack


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_a_provider_that_never_sends_a_first_token_is_left_at_first_token_timeout(
    clock: FakeClock, mode: str
) -> None:
    silent = Paced("silent", clock, [(0.0, HANG)])
    backup = Paced("backup", clock, FAST)
    agent = FallbackAgent(
        [silent, backup], first_token_timeout=0.5, timeout=60, max_retries=0, clock=clock
    )
    async with Ticker(clock):
        if mode == "run":
            result = await agent.run("hi")
            chunks = [result.text]
        else:
            async with agent.stream("hi") as s:
                chunks = [c async for c in s]
            result = s.result
    assert result.handled_by == "backup" and "".join(chunks) == "hello"
    first = result.attempts[0]
    assert isinstance(first.error, FirstTokenTimeout) and first.reason == "timeout"
    assert isinstance(first.error, ProviderTimeout)
    assert "first_token_timeout=0.5s" in str(first.error)
    assert near(first.duration, 0.5)
    assert silent.open == 0 and silent.closed == 1  # its stream (and connection) closed


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_a_stall_after_three_chunks_is_seen_at_idle_timeout(
    clock: FakeClock, mode: str
) -> None:
    stall = Paced("stall", clock, [(0.01, "a"), (0.02, "b"), (0.03, "c"), (0.04, HANG)])
    backup = Paced("backup", clock, FAST)
    agent = FallbackAgent(
        [stall, backup], idle_timeout=0.3, max_retries=0, clock=clock, mid_stream="continue"
    )
    async with Ticker(clock):
        if mode == "run":
            result = await agent.run("hi")
        else:
            async with agent.stream("hi") as s:
                [c async for c in s]
            result = s.result
    first = result.attempts[0]
    assert isinstance(first.error, StreamStalled)
    assert "idle_timeout=0.3s after 3 chunks" in str(first.error)
    assert near(first.duration, 0.03 + 0.3)
    assert result.handled_by == "backup" and stall.open == 0


async def test_a_stall_mid_stream_with_raise_ends_the_run(clock: FakeClock) -> None:
    stall = Paced("stall", clock, [(0.01, "a"), (0.02, HANG)])
    agent = FallbackAgent(
        [stall, Paced("b", clock, FAST)], idle_timeout=0.3, clock=clock, mid_stream="raise"
    )
    async with Ticker(clock), agent.stream("hi") as s:
        got = []
        with pytest.raises(StreamStalled):
            async for c in s:
                got.append(c)
    assert got == ["a"]


async def test_keep_alives_are_not_content(clock: FakeClock) -> None:
    pinging = Paced("ping", clock, [(0.1 * i, "") for i in range(1, 20)])
    agent = FallbackAgent([pinging], first_token_timeout=0.5, max_retries=0, clock=clock)
    async with Ticker(clock):
        with pytest.raises(FallbackError) as err:
            await agent.run("hi")
    assert isinstance(err.value.attempts[0].error, FirstTokenTimeout)
    assert near(err.value.attempts[0].duration, 0.5)


async def test_tool_call_deltas_are_content_and_run_assembles_the_final_response(
    clock: FakeClock,
) -> None:
    call = ToolCall("c1", "lookup", {"q": "x"})
    script = [(0.2 * i, ToolCallDelta(0, "c1", "lookup", "{")) for i in range(1, 6)]
    tools = Paced("tools", clock, script, final=Response("", tool_calls=(call,)))
    agent = FallbackAgent([tools], first_token_timeout=0.3, idle_timeout=0.3, clock=clock)
    async with Ticker(clock):  # the reply may call only a tool the request offered
        result = await agent.run(Request("hi", tools=[Tool("lookup")]))
    assert result.tool_calls == (call,) and result.text == ""


async def test_the_providers_own_deadline_wins_over_the_agents_default(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(0.8, "late")], first_token_timeout=1.0)
    agent = FallbackAgent([slow], first_token_timeout=0.5, idle_timeout=0.2, clock=clock)
    callee = agent.members[0].callee  # type: ignore[union-attr]
    assert isinstance(callee, Watched)
    assert (callee.watch.first_token, callee.watch.idle) == (1.0, 0.2)
    async with Ticker(clock):
        assert (await agent.run("hi")).text == "late"


async def test_no_deadline_watches_streams_only_and_no_stream_calls_the_provider_itself(
    clock: FakeClock,
) -> None:
    """With no deadline set, a streamed run of a vendor provider (``reports_progress``)
    still sees a stall (the default idle deadline), while ``run`` calls ``complete`` as
    before; a function's stream, or a provider without ``stream``, is called itself
    (issue 17 item 20)."""
    streaming = Paced("s", clock, FAST, reports_progress=True)
    callee = FallbackAgent([streaming]).members[0].callee  # type: ignore[union-attr]
    assert isinstance(callee, Watched)
    assert callee.watch == Watch(None, DEFAULT_IDLE_TIMEOUT, for_run=False)
    own = Paced("own", clock, FAST)
    assert FallbackAgent([own]).members[0].callee is own  # type: ignore[union-attr]
    completed: list[Request] = []

    class Both(Scripted):
        reports_progress = True

        async def stream(self, request: Request) -> AsyncIterator[str | Response]:
            yield "never"  # pragma: no cover - run must not stream
            yield Response("never")

    both = Both("both", ["ok"])
    both.requests = completed
    assert (await FallbackAgent([both]).run("hi")).text == "ok" and len(completed) == 1
    plain = Scripted("plain", ["ok"])
    agent = FallbackAgent([plain], first_token_timeout=0.5)
    assert agent.members[0].callee is plain  # type: ignore[union-attr]


async def test_function_provider_takes_the_deadlines(clock: FakeClock) -> None:
    async def gen(request: object):  # type: ignore[no-untyped-def]
        yield "a"
        await asyncio.Event().wait()

    fn = FunctionProvider(gen, name="fn", idle_timeout=0.2)
    assert fn.idle_timeout == 0.2 and fn.first_token_timeout is None
    agent = FallbackAgent([fn, Scripted("b", ["ok"])], max_retries=0, clock=clock)
    task = asyncio.create_task(agent.run("hi"))
    for _ in range(5):
        await asyncio.sleep(0)
    clock.advance(0.25)
    result = await task
    assert isinstance(result.attempts[0].error, StreamStalled)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"first_token_timeout": -1}, "FallbackAgent.first_token_timeout=-1"),
        ({"idle_timeout": "1s"}, "FallbackAgent.idle_timeout='1s'"),
        ({"first_token_timeout": 0}, "first_token_timeout=0"),
    ],
)
def test_deadlines_are_validated_by_the_one_seconds_rule(kwargs: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises((ValueError, TypeError), match=needle):
        FallbackAgent([Scripted("a", ["ok"])], **kwargs)


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_a_complete_answer_stands_when_its_tail_stalls(clock: FakeClock, mode: str) -> None:
    """The final Response came (the content is complete); the stream's tail then stalls
    past idle_timeout: a success, not StreamStalled (issue 17 item 2)."""
    tail = Paced("tail", clock, [(0.01, "he"), (0.02, "llo"), (0.03, Response("hello"))])
    tail.script.append((0.04, HANG))
    agent = FallbackAgent([tail], idle_timeout=0.3, max_retries=0, clock=clock)
    async with Ticker(clock):
        if mode == "run":
            result = await agent.run("hi")
        else:
            async with agent.stream("hi") as s:
                assert [c async for c in s] == ["he", "llo"]
            result = s.result
    assert result.text == "hello" and result.attempts[0].ok and tail.open == 0


async def test_progress_events_reset_the_idle_deadline_and_keep_alives_do_not(
    clock: FakeClock,
) -> None:
    steps = [(0.01, "a")] + [(0.01 + 0.2 * i, PROGRESS) for i in range(1, 6)]
    moving = Paced("moving", clock, [*steps, (1.2, "b")])
    agent = FallbackAgent([moving], idle_timeout=0.3, max_retries=0, clock=clock)
    async with Ticker(clock):
        assert (await agent.run("hi")).text == "ab"
    pinging = Paced("ping", clock, [(0.01, "a")] + [(0.01 + 0.2 * i, "") for i in range(1, 6)])
    agent = FallbackAgent([pinging], idle_timeout=0.3, max_retries=0, clock=clock)
    async with Ticker(clock):
        with pytest.raises(FallbackError) as err:
            await agent.run("hi")
    assert isinstance(err.value.attempts[0].error, StreamStalled)


async def test_a_stall_is_rescued_by_default_at_the_default_idle_deadline(
    clock: FakeClock,
) -> None:
    """Nothing set but the chain: a vendor stream that stalls after text (pings only) is
    left at DEFAULT_IDLE_TIMEOUT, not at its 60 s timeout, and the next child continues
    from the delivered text (issue 17 item 20: was a hang to the timeout, then an error)."""
    steps = [(0.01, "Hel"), (0.02, "lo")] + [(0.02 + 5.0 * i, "") for i in range(1, 12)]
    stall = Paced("stall", clock, [*steps, (60.0, HANG)], reports_progress=True)
    backup = Paced("backup", clock, [(0.01, " world")])
    agent = FallbackAgent([stall, backup], max_retries=0, clock=clock)
    async with Ticker(clock, step=0.01), agent.stream("hi") as s:
        chunks = [c async for c in s]
    assert "".join(chunks) == "Hello world" == s.result.text
    first = s.result.attempts[0]
    assert isinstance(first.error, StreamStalled)
    assert near(first.duration, 0.02 + DEFAULT_IDLE_TIMEOUT, slack=0.05)
    assert [(m.role, m.content) for m in backup.requests[0].messages][-1] == ("assistant", "Hello")
