"""The idle deadline costs a timer only for a wait: an item the provider has ready (the
rest of a body already received) is taken without one. Fake time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager

import pytest

from orchestrator import PROGRESS, Request, Response
from orchestrator.engine.deadlines import Watch, Watched
from orchestrator.errors import StreamStalled
from orchestrator.testing import FakeClock
from tests.orchestrator.engine.paced import Ticker


class CountingClock(FakeClock):
    """A fake clock counting the deadlines entered (each one a timer on the real clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[object]:
        self.timers += 1
        return super().timeout_at(deadline)


class Body:
    """A stream whose first item needs a wait, then ``ready`` items at once; ``stall``:
    then waits for good (with ``waits`` more waited-for items before)."""

    name = "body"

    def __init__(self, ready: int, waits: int = 0, stall: bool = False) -> None:
        self.ready, self.waits, self.stall = ready, waits, stall

    async def stream(self, request: Request) -> AsyncIterator[object]:
        await asyncio.sleep(0)
        for n in range(self.ready):
            yield f"c{n}"
            yield PROGRESS
        for n in range(self.waits):
            await asyncio.sleep(0)
            yield f"w{n}"
        if self.stall:
            await asyncio.Event().wait()
        yield Response(text="done")


async def test_items_ready_without_waiting_take_no_timer() -> None:
    clock = CountingClock()
    watched = Watched(Body(ready=6), Watch(None, idle=5.0), clock)
    response = await watched.assembled(Request("hi"))
    assert response.text == "done"
    assert clock.timers == 0  # main: one per item after the first content (11)


async def test_each_wait_after_the_first_content_takes_one_timer() -> None:
    clock = CountingClock()
    watched = Watched(Body(ready=2, waits=3), Watch(None, idle=5.0), clock)
    items: list[object] = []
    response = await watched.assembled(Request("hi"), items.append)
    assert items == ["c0", PROGRESS, "c1", PROGRESS, "w0", "w1", "w2"]
    assert response == Response(text="done") and clock.timers == 3


@pytest.mark.parametrize("ready", [0, 3])
async def test_many_streams_in_flight_stall_at_idle_or_answer(ready: int) -> None:
    clock = CountingClock()
    streams = [Body(ready=ready + 1, waits=1, stall=n % 2 == 0) for n in range(40)]

    async def one(body: Body) -> str:
        watched = Watched(body, Watch(None, idle=0.5), clock)
        try:
            return (await watched.assembled(Request("hi"))).text
        except StreamStalled:
            return "stalled"

    async with Ticker(clock):
        outcomes = await asyncio.gather(*(one(body) for body in streams))
    assert outcomes == ["stalled", "done"] * 20
    assert 0.5 <= clock.now() < 1.0
    # each stream's one waited item; each stalled stream's stall
    assert clock.timers == 40 + 20
