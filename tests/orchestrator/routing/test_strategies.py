"""The order strategies on fake time: latency follows the fastest and notices a recovered
region, least_busy balances calls in flight (shared through the store), cost is cheapest
first, hedges go to the next child in the run's order."""

from __future__ import annotations

import asyncio
import random

import pytest

from orchestrator import FallbackAgent, Request, Response, Usage
from orchestrator.health import MemoryHealthStore
from orchestrator.testing import FakeClock
from tests.orchestrator.engine.paced import Paced, Ticker
from tests.orchestrator.routing.fakes import Timed, shares


def _regions(clock: FakeClock, **kw: object) -> tuple[FallbackAgent, list[Timed]]:
    regions = [Timed("east", clock, 0.1), Timed("west", clock, 0.3), Timed("eu", clock, 0.5)]
    agent = FallbackAgent(regions, order="latency", hedge_after=None, clock=clock, **kw)  # type: ignore[arg-type]
    return agent, regions


async def _firsts(
    agent: FallbackAgent, calls: int, clock: FakeClock, gap: float = 0.0
) -> list[str]:
    out = []
    for _ in range(calls):
        out.append((await agent.run("hi")).attempts[0].agent)
        clock.advance(gap)
    return out


async def test_latency_sends_over_90_percent_to_the_fastest_within_200_calls_of_a_change(
    clock: FakeClock,
) -> None:
    agent, (east, west, _) = _regions(clock)
    assert shares((await _firsts(agent, 300, clock))[100:])["east"] > 0.9
    east.latency, west.latency = 1.0, 0.05  # east slows down; west is now the fastest
    after = await _firsts(agent, 200, clock)
    assert shares(after)["west"] > 0.9
    assert shares(after[:20])["west"] > 0.8  # it moves within a few calls, not 200


async def test_latency_notices_a_recovered_region_within_30_seconds(clock: FakeClock) -> None:
    agent, (east, _, _) = _regions(clock)
    east.down = True  # failing: its average climbs, the others serve
    firsts = await _firsts(agent, 100, clock, gap=0.5)
    assert shares(firsts[50:]).get("east", 0) < 0.1
    east.down, east.latency = False, 0.02  # recovered, and now the fastest
    recovered_at = clock.now()
    noticed = None
    for _ in range(200):
        first = (await agent.run("hi")).attempts[0].agent
        if (
            first == "east"
            and noticed is None
            and await _firsts(agent, 5, clock, 0.5) == ["east"] * 5
        ):
            noticed = clock.now() - recovered_at
        clock.advance(0.5)
    assert noticed is not None and noticed <= 30.0


async def test_latency_explores_a_stale_child_once_not_every_call_in_flight(
    clock: FakeClock,
) -> None:
    agent, regions = _regions(clock)
    await _firsts(agent, 50, clock)
    clock.advance(60)  # every figure is stale now
    calls_before = [r.calls for r in regions]
    await asyncio.gather(*(agent.run("hi") for _ in range(30)))
    explored = [r.calls - b for r, b in zip(regions, calls_before, strict=True)]
    assert explored[1] <= 2 and explored[2] <= 2  # the slow ones got a call or so each


class Held:
    """A provider whose calls wait until released (calls in flight)."""

    def __init__(self, name: str, gate: asyncio.Event) -> None:
        self.name, self.gate, self.calls = name, gate, 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        await self.gate.wait()
        return Response(self.name)


async def test_least_busy_spreads_calls_in_flight_across_agents_sharing_a_store() -> None:
    gate = asyncio.Event()
    store = MemoryHealthStore()
    children = [Held(n, gate) for n in ("a", "b", "c")]
    one = FallbackAgent(children, order="least_busy", health=store, hedge_after=None)
    two = FallbackAgent(children, order="least_busy", health=store, hedge_after=None)
    tasks = []
    for i in range(30):
        tasks.append(asyncio.create_task((one if i % 2 else two).run("hi")))
        await asyncio.sleep(0)  # each call in flight before the next is ordered
    assert [c.calls for c in children] == [10, 10, 10]
    assert [store.routing.in_flight(n) for n in "abc"] == [10, 10, 10]
    gate.set()
    await asyncio.gather(*tasks)
    assert [store.routing.in_flight(n) for n in "abc"] == [0, 0, 0]


class Priced:
    def __init__(self, name: str, price: tuple[float, float] | None) -> None:
        self.name, self.price, self.calls = name, price, 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        return Response(self.name)


class Rated(Priced):
    """A provider priced by a catalogue-like ``rates`` object (input tiers)."""

    class _Rates:
        def cost(self, usage: Usage) -> float:
            rate = 0.5 if usage.input_tokens < 1000 else 20.0
            return (usage.input_tokens * rate + usage.output_tokens * rate) / 1e6

    rates = _Rates()


async def test_cost_is_cheapest_first_for_this_request_and_unpriced_last() -> None:
    children = [Priced("unpriced", None), Priced("dear", (15, 75)), Rated("tiered", None)]
    agent = FallbackAgent(children, order="cost", hedge_after=None)
    short = await agent.run("hi")
    assert short.order == ("tiered", "dear", "unpriced") and short.handled_by == "tiered"
    long = await agent.run("word " * 5000)  # the tiered one's long-context rate is dearer
    assert long.order == ("dear", "tiered", "unpriced")


async def test_a_hedge_goes_to_the_next_child_in_the_runs_order(clock: FakeClock) -> None:
    a = Paced("a", clock, [(0.05, "a")])
    b = Paced("b", clock, [(5.0, "b")])
    c = Paced("c", clock, [(0.05, "c")])
    weights = {"a": 0.0, "b": 1.0, "c": 0.0}
    agent = FallbackAgent(
        [a, b, c], order="weighted", weights=weights, hedge_after=0.4, clock=clock
    )
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.order == ("b", "a", "c")
    assert result.handled_by == "a" and c.calls == 0


async def test_strategies_and_affinity_work_streamed(clock: FakeClock) -> None:
    agent, _ = _regions(clock, rng=random.Random(1))
    await _firsts(agent, 30, clock)
    async with agent.stream("hi", affinity="conv-1") as s:
        assert "".join([c async for c in s]) == "from east"
    assert s.result.order[0] == "east"


@pytest.mark.parametrize("order", ["priority", "weighted", "least_busy", "latency", "cost"])
def test_every_order_is_accepted_and_a_wrong_one_is_named(order: str) -> None:
    FallbackAgent([Priced("a", None), Priced("b", None)], order=order)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="order: 'fastest' is not one of priority, weighted"):
        FallbackAgent([Priced("a", None)], order="fastest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights: 'z' names no child"):
        FallbackAgent([Priced("a", None)], order="weighted", weights={"z": 1})
    with pytest.raises(ValueError, match="weights need order='weighted'"):
        FallbackAgent([Priced("a", None)], weights={"a": 1})
