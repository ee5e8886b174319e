"""What the engine puts between an attempt and a provider's stream on each item (issue 22):
one loop, with the deadlines, the hedge's claim and the delivery in it; no generator or
coroutine of the engine per item. Counted on fake time."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from orchestrator import PROGRESS, FallbackAgent, Request, Response
from orchestrator.engine.attempt import attempt
from orchestrator.errors import FirstTokenTimeout, StreamStalled
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.orchestrator.engine.paced import HANG, Paced, Ticker


class Layers:
    """A vendor's stream (it reports progress: the engine watches it) noting, at each item,
    the engine's frames between the attempt and its own."""

    reports_progress = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[list[str]] = []

    def _note(self) -> None:
        frame = sys._getframe(2)  # above _note and the stream itself
        names = []
        while frame is not None and frame.f_code is not attempt.__code__:
            names.append(frame.f_code.co_name)
            frame = frame.f_back  # type: ignore[assignment]
        assert frame is not None, "not called under an attempt"
        self.seen.append(names[::-1])

    async def stream(self, request: Request) -> AsyncIterator[object]:
        for item in ("he", PROGRESS, "", "llo"):
            self._note()
            await asyncio.sleep(0)  # a wait for each item: the deadline's timer path too
            yield item
        self._note()
        yield Response(text="hello")

    async def complete(self, request: Request) -> Response:
        raise AssertionError("streamed: run() streams under the default hedge or a deadline")


@pytest.mark.parametrize("mode", ["run", "stream"])
@pytest.mark.parametrize("hedge_after", ["auto", None])
async def test_a_call_takes_each_item_straight_from_the_providers_stream(
    clock: FakeClock, hedge_after: str | None, mode: str
) -> None:
    provider = Layers("first")
    agent = FallbackAgent([provider, Layers("second")], hedge_after=hedge_after, clock=clock)
    if mode == "run":
        if hedge_after is None:  # run() streams only under a deadline a user set
            agent = FallbackAgent([provider], idle_timeout=5, clock=clock)
        assert (await agent.run("hi")).text == "hello"
    else:
        async with agent.stream("hi", progress=True) as s:
            chunks = [c async for c in s]
        assert chunks == ["he", PROGRESS, "llo"] and s.result.text == "hello"
    # main, a hedged run: Racer.complete, assemble, Watched.stream, Watched._next on every
    # item; a stream: Streamed._stream, (a hedge: Racer.stream,) Watched.stream, _next
    assert provider.seen == [["_assembled"]] * 5


async def test_many_hedged_streams_in_flight_each_get_their_own_text(clock: FakeClock) -> None:
    """40 streams at once, on one fake timeline: a slow first child is hedged (and loses),
    one that stalls after its text is left at idle_timeout and continued by the next, the
    rest answer; each consumer sees its own text once, every stream is closed."""
    firsts, seconds = [], []
    for n in range(40):
        kind = n % 4
        script: list[tuple[float, object]] = [(0.01, f"a{n} "), (0.02, PROGRESS), (0.03, "b")]
        if kind == 1:  # slow to its first content: hedged at 0.2 s, the hedge wins
            script = [(1.0, f"slow{n}")]
        elif kind == 2:  # stalls after its text: left at idle_timeout
            script = [(0.01, f"a{n} "), (0.02, ""), (0.5, HANG)]
        firsts.append(Paced(f"first{n}", clock, script, reports_progress=True))
        seconds.append(Paced(f"second{n}", clock, [(0.05, f"c{n}")], reports_progress=True))
    agents = [
        FallbackAgent(
            [first, second], hedge_after=0.2, idle_timeout=0.3, max_retries=0, clock=clock
        )
        for first, second in zip(firsts, seconds, strict=True)
    ]

    async def one(agent: FallbackAgent) -> tuple[str, str, list[str]]:
        async with agent.stream("hi", mid_stream="continue") as s:
            text = "".join([c async for c in s])
        reasons = [a.reason or "ok" for a in s.result.attempts]
        return text, s.result.handled_by, reasons

    async with Ticker(clock):
        outcomes = await asyncio.gather(*(one(agent) for agent in agents))
    for n, (text, by, reasons) in enumerate(outcomes):
        kind = n % 4
        if kind == 1:
            assert (text, by, reasons) == (f"c{n}", f"second{n}", ["hedge_lost", "ok"])
        elif kind == 2:
            assert (text, by, reasons) == (f"a{n} c{n}", f"second{n}", ["timeout", "ok"])
        else:
            assert (text, by, reasons) == (f"a{n} b", f"first{n}", ["ok"])
    assert all(p.open == 0 for p in [*firsts, *seconds])


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_a_hedged_call_keeps_its_first_token_deadline(clock: FakeClock, mode: str) -> None:
    silent = Paced("silent", clock, [(0.0, HANG)], reports_progress=True)
    backup = Paced("backup", clock, [(0.01, "ok")], reports_progress=True)
    agent = FallbackAgent(
        [silent, backup], first_token_timeout=0.3, hedge_after=5, max_retries=0, clock=clock
    )
    async with Ticker(clock):
        if mode == "run":
            result = await agent.run("hi")
        else:
            async with agent.stream("hi") as s:
                assert [c async for c in s] == ["ok"]
            result = s.result
    assert result.text == "ok" and result.handled_by == "backup"
    assert isinstance(result.attempts[0].error, FirstTokenTimeout)
    assert not isinstance(result.attempts[0].error, StreamStalled)
    assert silent.open == 0 and backup.open == 0


async def test_a_chunk_already_there_costs_the_consumer_one_call() -> None:
    """The consumer takes a chunk the run has put with ``__anext__`` alone (main: an
    asyncio.Queue's get, empty, get_nowait, _get and _wakeup_next as well)."""
    texts = [f"c{n}" for n in range(50)]

    async def chunks(request: Request) -> AsyncIterator[str]:
        for text in texts:
            yield text

    agent = FallbackAgent([FunctionProvider(chunks, name="a")], hedge_after=None)
    async with agent.stream("hi") as s:
        for _ in range(20):  # the run ends without waiting: every chunk is there
            await asyncio.sleep(0)
        assert s.result.text == "".join(texts)
        calls = 0

        def profile(frame: object, event: str, arg: object) -> None:
            nonlocal calls
            calls += event == "call"

        got = []
        sys.setprofile(profile)
        try:
            for _ in texts:
                got.append(await s.__anext__())
        finally:
            sys.setprofile(None)
    assert got == texts
    assert calls == len(texts)
