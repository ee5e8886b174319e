"""Cancellation is never swallowed: a caller cancelled while a task it owns winds down sees it.

Awaiting a task forwards the awaiting task's cancellation into it, so "the task
ended cancelled" and "I was cancelled" look alike; these tests cancel the
caller exactly while it waits for a stopped task to finish.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from orchestrator import FallbackAgent, Request
from orchestrator.errors import AuthenticationFailed
from orchestrator.health import RedisHealthStore
from providers import FunctionProvider


class SlowToStop:
    """A streaming child whose clean-up after cancellation waits for the test to release it."""

    def __init__(self) -> None:
        self.cleaning = asyncio.Event()
        self.release = asyncio.Event()

    def agent(self) -> FallbackAgent:
        async def endless(request: Request) -> AsyncIterator[str]:
            try:
                while True:
                    yield "tick"
                    await asyncio.sleep(0)
            except BaseException:
                self.cleaning.set()
                await self.release.wait()  # e.g. closing a connection politely
                raise

        return FallbackAgent([FunctionProvider(endless, name="slow")])


async def _leave_early(agent: FallbackAgent, reached: list[str]) -> None:
    async with agent.stream("x") as s:
        async for _ in s:
            break
    reached.append("after the stream")


async def test_a_consumer_cancelled_while_the_stream_winds_down_sees_it() -> None:
    child, reached = SlowToStop(), list[str]()
    consumer = asyncio.create_task(_leave_early(child.agent(), reached))
    await child.cleaning.wait()  # the consumer is now inside StreamRun.__aexit__
    consumer.cancel()
    child.release.set()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert reached == []


async def test_asyncio_timeout_expiring_during_stream_exit_raises_timeout_error() -> None:
    child, reached = SlowToStop(), list[str]()
    loop = asyncio.get_running_loop()

    async def consumer() -> None:
        async with asyncio.timeout(None) as cm:
            expire.append(cm)
            await _leave_early(child.agent(), reached)
            await asyncio.sleep(3600)  # the work the timeout was meant to cut short

    expire: list[asyncio.Timeout] = []
    task = asyncio.create_task(consumer())
    await child.cleaning.wait()
    expire[0].reschedule(loop.time())  # the deadline passes exactly during __aexit__
    child.release.set()
    started = loop.time()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(task, 2)
    assert loop.time() - started < 0.5  # no overrun: the timeout is not lost
    assert reached == []


async def test_a_task_group_cancelling_a_consumer_during_stream_exit_is_obeyed() -> None:
    child, reached = SlowToStop(), list[str]()

    async def sibling() -> None:
        await child.cleaning.wait()
        child.release.set()
        raise RuntimeError("sibling failed")

    with pytest.raises(ExceptionGroup) as info:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(_leave_early(child.agent(), reached))
            tg.create_task(sibling())
    assert [type(e) for e in info.value.exceptions] == [RuntimeError]
    assert reached == []


async def test_storm_of_leave_early_streams_cancelled_at_random_points() -> None:
    rng = random.Random(20261201)
    outcomes: list[tuple[asyncio.Task[str], bool]] = []

    def child(cleanup_steps: int) -> FunctionProvider:
        async def fn(request: Request) -> AsyncIterator[str]:
            try:
                for _ in range(50):
                    yield "tick"
                    await asyncio.sleep(0)
            finally:
                for _ in range(cleanup_steps):
                    await asyncio.sleep(0)

        return FunctionProvider(fn, name="c")

    async def consumer(reads: int, cleanup_steps: int) -> str:
        agent = FallbackAgent([child(cleanup_steps)], max_retries=0)
        async with agent.stream("x") as s:
            n = 0
            async for _ in s:
                n += 1
                if n >= reads:
                    break
        for _ in range(3):
            await asyncio.sleep(0)
        return "done"

    async def cancel_after(task: asyncio.Task[str], steps: int) -> None:
        for _ in range(steps):
            await asyncio.sleep(0)
        outcomes.append((task, task.cancel()))

    before = asyncio.all_tasks()
    cancellers = []
    for _ in range(600):
        task = asyncio.create_task(consumer(rng.randint(1, 3), rng.randint(0, 6)))
        cancellers.append(asyncio.create_task(cancel_after(task, rng.randint(0, 40))))
    await asyncio.gather(*cancellers)
    await asyncio.gather(*(task for task, _ in outcomes), return_exceptions=True)
    lost = [t for t, cancelled in outcomes if cancelled and not t.cancelled()]
    finished = [t for t, cancelled in outcomes if not cancelled]
    assert lost == []
    assert all(t.result() == "done" for t in finished)
    assert 0 < len(finished) < 600  # the seed cancels some early, some in __aexit__, some late
    for _ in range(5):
        await asyncio.sleep(0)
    assert asyncio.all_tasks() == before  # no run task, no child left behind


# -- the other places that stop a task they own --------------------------------------


async def _stubborn(cleaning: asyncio.Event, release: asyncio.Event) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cleaning.set()
        await release.wait()
        raise


async def test_redis_store_aclose_cancelled_while_its_sync_task_stops_sees_it() -> None:
    store = RedisHealthStore("redis://127.0.0.1:9", timeout=0.01)
    cleaning, release = asyncio.Event(), asyncio.Event()
    store._task = asyncio.create_task(_stubborn(cleaning, release))
    closing = asyncio.create_task(store.aclose())
    await cleaning.wait()  # aclose gave up waiting politely and cancelled the sync task
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    release.set()


async def test_redis_store_stopping_its_listener_does_not_swallow_cancellation() -> None:
    store = RedisHealthStore("redis://127.0.0.1:9")
    cleaning, release = asyncio.Event(), asyncio.Event()
    listener = asyncio.create_task(_stubborn(cleaning, release))
    await asyncio.sleep(0)
    stopping = asyncio.create_task(store._stop(None, listener))
    await cleaning.wait()
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    release.set()


async def test_retry_on_predicate_never_retries_cancellation() -> None:
    calls = 0

    async def primary(req: Request) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(10)
        return "late"

    agent = FallbackAgent(
        [FunctionProvider(primary)],
        max_retries=3,
        retry_strategy="none",
        retry_on=lambda e: not isinstance(e, AuthenticationFailed),
    )
    task = asyncio.create_task(agent.run("x"))
    while calls < 2:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 2
