"""``latency`` ranks by time to first token on fake time: a streamed call's sample is its
answering attempt's first content, not its whole reply; a whole reply's is its arrival."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent
from orchestrator.testing import FakeClock
from tests.orchestrator.engine.paced import HANG, Paced, Ticker
from tests.orchestrator.routing.fakes import shares


def _regions(clock: FakeClock, hedge_after: float | None) -> tuple[FallbackAgent, Paced, Paced]:
    # brief: a slow first token (0.5 s), done at 0.6 s; burst: a fast first token (0.05 s)
    # and a long stream (2 s). Listed brief first, so chain order cannot pass the test.
    brief = Paced("brief", clock, [(0.5, "slow start, "), (0.6, "short")])
    burst = Paced("burst", clock, [(0.05 + i * 0.1, f"chunk {i} ") for i in range(20)])
    agent = FallbackAgent([brief, burst], order="latency", hedge_after=hedge_after, clock=clock)
    return agent, brief, burst


async def _streamed(agent: FallbackAgent, answered: bool = False) -> str:
    """Stream one call; the child tried first (``answered``: the one that answered)."""
    async with agent.stream("hi") as s:
        async for _ in s:
            pass
    result = s.result
    return str(result.handled_by) if answered else result.attempts[0].agent


def _figure(agent: FallbackAgent, name: str) -> float:
    known = agent.router.state(agent).latency(name)
    assert known is not None
    return known[0]


async def test_a_fast_first_token_with_a_long_stream_ranks_ahead_of_a_slow_first_token(
    clock: FakeClock,
) -> None:
    agent, _, _ = _regions(clock, hedge_after=None)
    async with Ticker(clock, step=0.005):
        firsts = [await _streamed(agent) for _ in range(20)]
    assert _figure(agent, "burst") == pytest.approx(0.05, abs=0.01)  # main: 1.95 (whole)
    assert _figure(agent, "brief") == pytest.approx(0.5, abs=0.01)
    # The first two calls learn both; then burst goes first but for explorations of brief.
    assert shares(firsts[2:])["burst"] > 0.75


async def test_a_whole_reply_is_its_own_first_token(clock: FakeClock) -> None:
    agent, _, _ = _regions(clock, hedge_after=None)
    async with Ticker(clock, step=0.005):
        firsts = [(await agent.run("hi")).attempts[0].agent for _ in range(10)]
    assert _figure(agent, "burst") == pytest.approx(1.95, abs=0.02)  # run(): the reply's arrival
    assert _figure(agent, "brief") == pytest.approx(0.6, abs=0.02)
    assert firsts[2:].count("brief") >= 7


async def test_many_streams_in_flight_each_sample_their_own_first_token(
    clock: FakeClock,
) -> None:
    agent, _, _ = _regions(clock, hedge_after=None)
    async with Ticker(clock, step=0.005):
        await _streamed(agent)
        await _streamed(agent)  # both learnt; now 40 at once, started 10 ms apart
        calls = []
        for _ in range(40):
            calls.append(asyncio.create_task(_streamed(agent)))
            clock.advance(0.01)
            await asyncio.sleep(0)
        await asyncio.gather(*calls)
    assert _figure(agent, "burst") == pytest.approx(0.05, abs=0.01)


async def test_a_hedged_lane_samples_its_first_token_from_its_own_start(
    clock: FakeClock,
) -> None:
    # a's first content 0.5 s after its call starts; b never answers. Whichever lane went
    # first, a's sample is 0.5 s from its own start: not from the other lane's, nor its
    # whole reply's (0.6 s).
    a = Paced("a", clock, [(0.5, "first, "), (0.6, "done")])
    b = Paced("b", clock, [(0.0, HANG)])
    agent = FallbackAgent([a, b], order="latency", hedge_after=0.3, clock=clock)
    async with Ticker(clock, step=0.002):
        assert await _streamed(agent, answered=True) == "a"
    assert _figure(agent, "a") == pytest.approx(0.5, abs=0.01)
