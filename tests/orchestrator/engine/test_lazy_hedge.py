"""The default hedge is lazy: the first child runs in the caller's task, and the race is
built only once that call waits (orchestrator.engine.inline). Fake time."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, Request
from orchestrator.engine import hedging, inline
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.orchestrator.engine.paced import Ticker
from tests.orchestrator.engine.test_hedging import slow_and_fast


async def test_a_first_child_that_answers_without_waiting_builds_no_task() -> None:
    # The seam: the task the provider runs in, and the tasks alive while it runs. A lane
    # task (or a watcher) built for a call that never waits would show in either.
    seen: list[tuple[asyncio.Task[object] | None, int]] = []

    async def answer(request: Request) -> str:
        seen.append((asyncio.current_task(), len(asyncio.all_tasks())))
        return "ok"

    agent = FallbackAgent([FunctionProvider(answer, name="a"), FunctionProvider(answer, name="b")])
    before = len(asyncio.all_tasks())
    for _ in range(3):
        result = await agent.run("hi")
        assert result.handled_by == "a" and result.text == "ok"
    assert seen == [(asyncio.current_task(), before)] * 3
    assert len(asyncio.all_tasks()) == before


async def test_a_first_child_that_waits_but_answers_in_time_builds_no_task() -> None:
    # On the system clock the hedge delay is a loop timer: no watcher task until it is due.
    seen: list[tuple[asyncio.Task[object] | None, int]] = []

    async def answer(request: Request) -> str:
        await asyncio.sleep(0)  # waits (a turn of the loop), far within the default delay
        seen.append((asyncio.current_task(), len(asyncio.all_tasks())))
        return "ok"

    agent = FallbackAgent([FunctionProvider(answer, name="a"), FunctionProvider(answer, name="b")])
    before = len(asyncio.all_tasks())
    results = [await agent.run("hi") for _ in range(3)]
    assert [r.handled_by for r in results] == ["a"] * 3
    assert seen == [(asyncio.current_task(), before)] * 3
    assert len(asyncio.all_tasks()) == before


async def test_a_cut_first_child_leaves_the_caller_no_pending_cancellation(
    clock: FakeClock,
) -> None:
    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    me = asyncio.current_task()
    assert me is not None
    async with Ticker(clock):
        for _ in range(3):
            result = await agent.run("hi")
            assert result.handled_by == "fast"
            assert [a.reason for a in result.attempts] == ["hedge_lost", None]
            assert me.cancelling() == 0
            await asyncio.sleep(0)  # not cancelled by a cut left behind
    assert slow.open == 0 and fast.open == 0


async def test_the_callers_own_cancellation_of_an_adopted_call_is_kept(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock, slow_at=5.0, fast_at=5.0)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        task = asyncio.create_task(agent.run("hi"))
        while fast.calls == 0:  # the hedge started: the first call is a lane now
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert slow.open == 0 and fast.open == 0
    assert len(asyncio.all_tasks()) == 1


async def test_many_calls_in_flight_mixing_answered_hedged_and_cut(clock: FakeClock) -> None:
    agents = []
    for i in range(40):
        slow_at = (0.1, 0.5, 2.0)[i % 3]  # in time; won after the hedge; cut by the hedge
        agents.append(
            FallbackAgent(slow_and_fast(clock, slow_at, 0.3), hedge_after=0.4, clock=clock)
        )
    async with Ticker(clock):
        results = await asyncio.gather(*(a.run("hi") for a in agents))
    for i, result in enumerate(results):
        want = ("slow", "slow", "fast")[i % 3]
        assert result.handled_by == want, i
        reasons = [a.reason for a in result.attempts]
        assert reasons == ([None] if i % 3 == 0 else ["hedge_lost", None]), i
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    assert len(asyncio.all_tasks()) == 1


async def test_a_first_child_that_waits_but_answers_in_time_makes_no_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing waits on the race's "changed" event unless a watcher runs: none is made.
    made: list[object] = []

    class Counted(asyncio.Event):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    async def answer(request: Request) -> str:
        await asyncio.sleep(0)
        return "ok"

    monkeypatch.setattr(asyncio, "Event", Counted)
    agent = FallbackAgent([FunctionProvider(answer, name="a"), FunctionProvider(answer, name="b")])
    results = await asyncio.gather(*(agent.run("hi") for _ in range(20)))
    assert {r.handled_by for r in results} == {"a"}
    assert made == []


@pytest.fixture
def adopted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The futures the race sees a first child's inline call through, as they are made."""
    made: list[object] = []

    class Counted(inline.Adopted):
        def __init__(self, caller: asyncio.Task[object]) -> None:
            super().__init__(caller)
            made.append(self)

    monkeypatch.setattr(hedging, "Adopted", Counted)
    return made


async def test_a_first_child_that_waits_but_answers_in_time_makes_no_future(
    adopted: list[object],
) -> None:
    # On the system clock the call waits under a loop timer only: the future the race
    # would see it through is made when the hedge is due (main: one per call that waited).
    async def answer(request: Request) -> str:
        await asyncio.sleep(0)
        return "ok"

    agent = FallbackAgent([FunctionProvider(answer, name="a"), FunctionProvider(answer, name="b")])
    results = await asyncio.gather(*(agent.run("hi") for _ in range(20)))
    assert {r.handled_by for r in results} == {"a"}
    assert adopted == []


async def test_a_first_child_still_racing_when_the_hedge_is_due_is_adopted(
    clock: FakeClock, adopted: list[object]
) -> None:
    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "fast" and len(adopted) == 1
    assert [a.reason for a in result.attempts] == ["hedge_lost", None]


async def test_the_callers_cancellation_before_the_hedge_is_due_cuts_the_call_alone() -> None:
    started, gate = asyncio.Event(), asyncio.Event()

    async def waits(request: Request) -> str:
        started.set()
        await gate.wait()  # never set: only the caller's cancellation ends it
        return "late"

    second = FunctionProvider(waits, name="b")
    agent = FallbackAgent([FunctionProvider(waits, name="a"), second])
    before = len(asyncio.all_tasks())
    for _ in range(3):
        task = asyncio.create_task(agent.run("hi"))
        await started.wait()
        started.clear()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(asyncio.all_tasks()) == before  # no watcher, no lane left behind
    loop = asyncio.get_running_loop()
    assert not [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
