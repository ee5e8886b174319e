"""Hedging races the tests of test_hedging.py do not reach (fake time)."""

from __future__ import annotations

import asyncio

from orchestrator import FallbackAgent, Request
from orchestrator.testing import FakeClock, capture_events
from tests.orchestrator.engine.paced import HANG, Paced, Ticker, until
from tests.orchestrator.engine.test_hedging import slow_and_fast


async def test_no_hedge_starts_once_the_primary_won_while_before_fallback_ran(
    clock: FakeClock,
) -> None:
    """An async ``before_fallback`` for a hedge: the primary produces content meanwhile."""

    async def slow_redaction(request: Request, reason: str) -> Request:
        await until(clock, clock.now() + 0.3)  # the primary's first token comes at 0.5
        return request

    slow, fast = slow_and_fast(clock, slow_at=0.5)
    agent = FallbackAgent(
        [slow, fast], hedge_after=0.4, before_fallback=slow_redaction, clock=clock
    )
    with capture_events() as logs:
        async with Ticker(clock):
            result = await agent.run("hi")
    assert result.handled_by == "slow" and result.text == "slow!"
    assert not any(e["event"] == "hedge_started" for e in logs)
    assert [a.agent for a in result.attempts] == ["slow"]
    assert fast.calls == 0


async def test_a_stream_consumer_leaving_after_one_chunk_leaves_no_lane(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(2.0, "slow"), (2.01, "!")])
    fast = Paced("fast", clock, [(0.05, "fast"), (0.06, HANG)])
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    before = asyncio.all_tasks()
    async with Ticker(clock), agent.stream("hi") as chunks:
        async for chunk in chunks:
            assert chunk == "fast"
            break
    await asyncio.sleep(0)
    assert slow.open == fast.open == 0 and asyncio.all_tasks() - before == set()
