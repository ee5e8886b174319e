"""Issue 17 item 19: a first token after 20 s is rescued by default (``hedge_after="auto"``),
without cutting a slow but healthy model: the slow one races, it is not stopped."""

from __future__ import annotations

import asyncio

from orchestrator import FallbackAgent, Usage
from orchestrator.engine.hedge_delay import MIN_SAMPLES
from orchestrator.testing import FakeClock
from tests.orchestrator.engine.paced import Paced, Ticker

STEP = 0.02  # fake seconds per loop turn: 20 s of fake time in about a thousand turns


def late(clock: FakeClock, at: float = 20.0) -> Paced:
    return Paced("late", clock, [(at, "late answer")], usage=Usage(5, 3))


def fallback(clock: FakeClock) -> Paced:
    return Paced("fallback", clock, [(0.5, "fallback answer")], usage=Usage(5, 4))


async def test_a_first_token_after_20_s_is_rescued_by_default(clock: FakeClock) -> None:
    slow, backup = late(clock), fallback(clock)
    agent = FallbackAgent([slow, backup], max_retries=2, clock=clock)  # nothing else set
    async with Ticker(clock, STEP):
        result = await agent.run("a prompt")
    assert result.handled_by == "fallback" and result.text == "fallback answer"
    assert 10.0 <= result.latency < 11.0  # hedged at 10 s, not waited for 20
    lost, won = result.attempts
    assert (lost.agent, lost.reason, lost.error) == ("late", "hedge_lost", None)
    assert won.ok and "hedge: late had no content after 10" in (won.note or "")
    assert lost.usage is not None and lost.usage.output_tokens == 0  # billed: input only
    assert slow.open == 0 and slow.closed == 1  # the loser is cancelled, not left running
    assert result.usage == Usage(lost.usage.input_tokens + 5, 4)


async def test_the_default_follows_a_shorter_attempt_timeout(clock: FakeClock) -> None:
    slow, backup = late(clock, at=0.4), fallback(clock)
    agent = FallbackAgent([slow, backup], attempt_timeout=0.6, clock=clock)
    async with Ticker(clock, 0.001):
        result = await agent.run("x")
    assert result.handled_by == "late"  # started at 0 and first at 0.4: it won the race
    assert [a.reason for a in result.attempts] == ["hedge_lost", None]
    assert backup.calls == 1  # the hedge started at 0.2 s: a third of the attempt timeout


async def test_a_slow_model_alone_is_never_hedged_nor_cut(clock: FakeClock) -> None:
    slow = late(clock, at=25.0)
    agent = FallbackAgent([slow], clock=clock)
    async with Ticker(clock, STEP):
        result = await agent.run("x")
    assert result.handled_by == "late" and len(result.attempts) == 1


async def test_a_model_always_slow_to_start_stops_being_duplicated(clock: FakeClock) -> None:
    # A reasoning model that takes 15 s to its first token, every time: once its own p99 is
    # known the default waits for it rather than doubling every call.
    slow, backup = late(clock, at=15.0), Paced("fallback", clock, [(30.0, "too slow")])
    agent = FallbackAgent([slow, backup], clock=clock)
    async with Ticker(clock, 0.05):
        for _ in range(MIN_SAMPLES):
            await agent.run("x")
        calls = backup.calls
        result = await agent.run("x")
    assert result.handled_by == "late" and len(result.attempts) == 1
    assert backup.calls == calls  # no hedge once the model's own latency was learned


async def test_off_with_none_waits_for_the_first_token(clock: FakeClock) -> None:
    slow, backup = late(clock), fallback(clock)
    agent = FallbackAgent([slow, backup], hedge_after=None, clock=clock)
    async with Ticker(clock, STEP):
        result = await agent.run("x")
    assert result.handled_by == "late" and backup.calls == 0


async def test_many_calls_in_flight_each_hedge_once(clock: FakeClock) -> None:
    slow, backup = late(clock), fallback(clock)
    agent = FallbackAgent([slow, backup], clock=clock)
    async with Ticker(clock, STEP):
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(30)))
    assert {r.handled_by for r in results} == {"fallback"}
    assert slow.calls == 30 and backup.calls == 30  # one hedge per call, never more
    assert slow.open == 0 and backup.open == 0
