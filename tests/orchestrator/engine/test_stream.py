"""agent.stream: chunks as they arrive, free failover before the first chunk, mid-stream modes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from orchestrator import PROGRESS, FallbackAgent, FallbackError, Request, Response, Stop
from orchestrator.errors import Rejected, ServerError, StreamInterrupted
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.conftest import Scripted


def gen(name: str, chunks: list[str], fail: Exception | None = None) -> FunctionProvider:
    async def fn(req: Request) -> AsyncIterator[str]:
        for c in chunks:
            yield c
        if fail is not None:
            raise fail

    return FunctionProvider(fn, name=name)


async def collect(agent: FallbackAgent, **kw: object) -> tuple[list[str], object]:
    out: list[str] = []
    async with agent.stream("x", **kw) as s:  # type: ignore[arg-type]
        async for chunk in s:
            out.append(chunk)
    return out, s.result


async def test_streams_chunks_and_result() -> None:
    chunks, result = await collect(FallbackAgent([gen("a", ["He", "llo"])]))
    assert chunks == ["He", "llo"]
    assert result.text == "Hello" and result.handled_by == "a"  # type: ignore[attr-defined]


async def test_failover_is_free_before_the_first_chunk() -> None:
    agent = FallbackAgent([gen("a", [], ServerError("down")), gen("b", ["fine"])], max_retries=0)
    chunks, result = await collect(agent)
    assert chunks == ["fine"] and result.handled_by == "b"  # type: ignore[attr-defined]


async def test_mid_stream_continue_is_the_default() -> None:
    """Issue 17 item 20: a stream cut mid-answer is continued by default (was "raise")."""
    agent = FallbackAgent(
        [gen("a", ["par", "tial"], StreamInterrupted("cut")), gen("b", ["x"])], max_retries=0
    )
    chunks, result = await collect(agent)
    assert chunks == ["par", "tial", "x"] and result.text == "partialx"  # type: ignore[attr-defined]
    assert agent.mid_stream == "continue"


async def test_mid_stream_raise_is_never_silent() -> None:
    agent = FallbackAgent(
        [gen("a", ["par", "tial"], StreamInterrupted("cut")), gen("b", ["x"])], mid_stream="raise"
    )
    seen: list[str] = []
    with pytest.raises(StreamInterrupted):
        async with agent.stream("x") as s:
            async for chunk in s:
                seen.append(chunk)
    assert seen == ["par", "tial"]
    assert [a.agent for a in s.attempts] == ["a"]  # no retry after text was delivered


async def test_mid_stream_continue_sends_the_prefix_and_never_repeats_text() -> None:
    got: list[list[tuple[str, str]]] = []

    async def b(req: Request) -> AsyncIterator[str]:
        got.append([(m.role, m.content) for m in req.messages])
        yield " world"

    agent = FallbackAgent(
        [gen("a", ["Hello"], StreamInterrupted("cut")), FunctionProvider(b, name="b")],
        max_retries=0,
    )
    chunks, result = await collect(agent, mid_stream="continue")
    assert chunks == ["Hello", " world"]
    assert result.text == "Hello world"  # type: ignore[attr-defined]
    assert got == [[("user", "x"), ("assistant", "Hello")]]


async def test_a_stream_without_its_final_response_is_interrupted() -> None:
    class NoEnd:
        name = "noend"

        async def complete(self, request: Request) -> Response:
            return Response("unused")

        async def stream(self, request: Request) -> AsyncIterator[str | Response]:
            yield "half"

    with pytest.raises(StreamInterrupted):
        await collect(FallbackAgent([NoEnd()], mid_stream="raise"))
    with pytest.raises(FallbackError) as err:  # continued (the default), and cut each time
        await collect(FallbackAgent([NoEnd()]))
    assert {type(a.error) for a in err.value.attempts} == {StreamInterrupted}


async def test_all_failed_stream_raises_fallback_error() -> None:
    agent = FallbackAgent([gen("a", [], ServerError("x"))], max_retries=0)
    with pytest.raises(FallbackError):
        await collect(agent)


async def test_leaving_early_cancels_the_run_and_leaks_nothing() -> None:
    closed = asyncio.Event()

    async def endless(req: Request) -> AsyncIterator[str]:
        try:
            while True:
                yield "tick"
                await asyncio.sleep(0)
        finally:
            closed.set()

    before = asyncio.all_tasks()
    async with FallbackAgent([FunctionProvider(endless)]).stream("x") as s:
        async for _ in s:
            break
    assert closed.is_set()
    assert asyncio.all_tasks() == before


async def test_before_fallback_redacts_the_streamed_prefix_too() -> None:
    got: list[list[tuple[str, str]]] = []

    async def b(req: Request) -> AsyncIterator[str]:
        got.append([(m.role, m.content) for m in req.messages])
        yield " done"

    def redact(req: Request, why: str) -> Request:
        return req.replace(
            messages=[
                {"role": m.role, "content": m.content.replace("bob@example.com", "[email]")}
                for m in req.messages
            ]
        )

    agent = FallbackAgent(
        [
            gen("a", ["mail bob@example.com", " now"], StreamInterrupted("cut")),
            FunctionProvider(b, name="b"),
        ],
        max_retries=0,
        mid_stream="continue",
        before_fallback=redact,
    )
    chunks, result = await collect(agent)
    assert chunks == ["mail bob@example.com", " now", " done"]  # the consumer saw the original
    assert got == [[("user", "x"), ("assistant", "mail [email] now")]]
    assert result.text == "mail bob@example.com now done"  # type: ignore[attr-defined]


async def test_stop_and_best_effort_text_reach_a_stream() -> None:
    agent = FallbackAgent(
        [Scripted("a", [ServerError("x")]), Scripted("b", ["never"])],
        max_retries=0,
        before_fallback=lambda r, why: Stop(text="Sorry, try later"),
    )
    async with agent.stream("x") as s:
        chunks = [c async for c in s]
    assert chunks == ["Sorry, try later"] == [s.result.text]
    agent2 = FallbackAgent(
        [Scripted("a", [ServerError("x")])],
        max_retries=0,
        best_effort=lambda attempts: "cached answer",
    )
    async with agent2.stream("x") as s2:
        chunks = [c async for c in s2]
    assert chunks == ["cached answer"] and s2.result.best_effort


async def test_a_refused_streamed_reply_is_never_continued_from() -> None:
    sent: list[Request] = []

    async def a(req: Request) -> AsyncIterator[str]:
        yield "I cannot "
        yield "help."

    async def b(req: Request) -> AsyncIterator[str]:
        sent.append(req)
        yield "fine"

    agent = FallbackAgent(
        [FunctionProvider(a), FunctionProvider(b)],
        max_retries=0,
        accept=lambda r: "cannot" not in r.text,
    )
    with pytest.raises(Rejected):
        async with agent.stream("q", mid_stream="continue") as s:
            async for _ in s:
                pass
    assert sent == []


async def test_a_stream_says_which_provider_its_text_comes_from(clock: FakeClock) -> None:
    from orchestrator.errors import AuthenticationFailed

    agent = FallbackAgent(
        [Scripted("a", [AuthenticationFailed("k")]), Scripted("b", ["hello"])], clock=clock
    )
    async with agent.stream("hi") as s:
        assert s.answering is None  # nothing delivered yet
        chunks = [c async for c in s]
        assert chunks and s.answering == "b"


async def test_result_after_leaving_early_is_a_runtime_error_with_the_attempt() -> None:
    """Issue 17 item 16: a storm of streams left early, concurrently. Each ``s.result``
    is the documented RuntimeError (was CancelledError in a task nobody cancelled), and
    the call the consumer left is recorded in ``s.attempts`` (was empty)."""

    async def endless(req: Request) -> AsyncIterator[str]:
        while True:
            yield "tick"
            await asyncio.sleep(0)

    agent = FallbackAgent([FunctionProvider(endless, name="endless")])

    async def leave_early() -> tuple[str, list[str | None]]:
        async with agent.stream("x") as s:
            async for _ in s:
                break
        try:
            _ = s.result
        except RuntimeError as e:
            return type(e).__name__, [a.reason for a in s.attempts]
        except BaseException as e:  # CancelledError on main: counted, not raised
            return type(e).__name__, [a.reason for a in s.attempts]
        return "a result", []

    outcomes = await asyncio.gather(*(leave_early() for _ in range(3000)))
    kinds = {kind for kind, _ in outcomes}
    assert kinds == {"RuntimeError"}
    assert all(reasons == ["cancelled"] for _, reasons in outcomes)


class Evented:
    """A vendor-like stream: text, protocol events without text, a keep-alive, the Response."""

    name = "a"

    async def complete(self, request: Request) -> Response:
        return Response("Hello")

    async def stream(self, request: Request) -> AsyncIterator[str | Response]:
        for item in ("He", PROGRESS, "", "llo", PROGRESS):
            yield item
        yield Response("Hello")


async def test_progress_brings_a_relay_each_event_without_text() -> None:
    """Issue 22: a relay (the gateway) hears of each provider event that moves the stream
    without text (the stop reason ahead of the usage), to keep its own client in step;
    keep-alives ("") stay out, and a plain consumer sees text only."""
    agent = FallbackAgent([Evented()])
    chunks, result = await collect(agent, progress=True)
    assert chunks == ["He", "", "llo", ""]
    assert [c is PROGRESS for c in chunks] == [False, True, False, True]
    assert result.text == "Hello"  # type: ignore[attr-defined]
    chunks, _ = await collect(agent)
    assert chunks == ["He", "llo"]
