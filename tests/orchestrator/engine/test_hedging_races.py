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


async def test_a_winner_failing_after_its_first_token_falls_over_to_the_lane_it_beat(
    clock: FakeClock,
) -> None:
    """The hedge lost only the race to first content: when the winner then fails, the
    call goes on to it, as an unhedged chain would (it failed without ever trying it)."""
    from orchestrator.errors import ServerError

    a = Paced("a", clock, [(0.5, "a"), (0.6, ServerError("cut", provider="a"))])
    b = Paced("b", clock, [(1.0, "b"), (1.01, "!")])
    agent = FallbackAgent([a, b], hedge_after=0.4, clock=clock, max_retries=0)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "b" and result.text == "b!"
    assert [(x.agent, x.reason) for x in result.attempts] == [
        ("b", "hedge_lost"),
        ("a", "error"),
        ("b", None),
    ]
    assert a.open == b.open == 0 and b.calls == 2


async def test_a_winner_failing_skips_a_lane_that_had_failed_on_its_own(clock: FakeClock) -> None:
    """a (slow) is hedged by b at 0.4, which fails on its own; c hedges b at 0.8 and loses
    to a's first token at 0.9; a then fails: the call goes on to c, not to b again."""
    from orchestrator.errors import ServerError

    a = Paced("a", clock, [(0.9, "a"), (1.0, ServerError("cut", provider="a"))])
    b = Paced("b", clock, [(0.01, ServerError("down", provider="b"))])
    c = Paced("c", clock, [(1.0, "c"), (1.01, "!")])
    agent = FallbackAgent([a, b, c], hedge_after=0.4, max_hedges=2, clock=clock, max_retries=0)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "c" and result.text == "c!"
    assert (a.calls, b.calls, c.calls) == (1, 1, 2)
    assert a.open == b.open == c.open == 0
