"""The memory limiter's hot path: a provider limited by requests and calls in flight only
(no tpm, no budget) is taken from a lane kept per provider, in one method call; the lane
is made again when the health store, the clock, the limits or the default store change."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

from orchestrator import Budget, FallbackAgent, Limits, Request, Response
from orchestrator.capacity import reset_default_capacity
from orchestrator.health import MemoryHealthStore
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.conftest import InFlight


async def ok(request: Request) -> str:
    return "ok"


async def _python_calls(agent: FallbackAgent, runs: int) -> int:
    """Python function calls made by ``runs`` runs of ``agent`` (C calls not counted)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        for _ in range(runs):
            await agent.run("hi")
    finally:
        sys.setprofile(None)
    return count


async def test_a_limited_call_costs_at_most_one_python_call_over_a_plain_one() -> None:
    limits = Limits(rpm=10**9, max_concurrency=10**6)
    for health in (None, MemoryHealthStore()):
        plain = FallbackAgent([FunctionProvider(ok, name="p")], health=health, hedge_after=None)
        limited = FallbackAgent(
            [FunctionProvider(ok, name="l", limits=limits)], health=health, hedge_after=None
        )
        await plain.run("warm")
        await limited.run("warm")
        extra = (await _python_calls(limited, 20) - await _python_calls(plain, 20)) / 20
        # admit, the lane's take, the ticket's release; a plain call: admit, want_of
        # (main: 8 more a call)
        assert extra <= 1, (health, extra)


class Gate:
    """A provider's function holding every call until ``opened`` is set; ``inside`` counts."""

    def __init__(self) -> None:
        self.opened, self.inside = asyncio.Event(), InFlight()

    async def __call__(self, request: Request) -> Response:
        with self.inside:
            await self.opened.wait()
        return Response("held")


async def test_the_lane_is_exact_under_many_calls_in_flight(clock: FakeClock) -> None:
    gate = Gate()
    release, inside = gate.opened, gate.inside
    limits = Limits(rpm=30, max_concurrency=5)
    a = FunctionProvider(gate, name="a", limits=limits)
    b = FunctionProvider(ok, name="b")
    agent = FallbackAgent([a, b], clock=clock, hedge_after=None)
    handled: list[str | None] = []
    for _ in range(10):  # 10 rounds of 50 runs: 5 in flight at once, 30 in the window
        runs = [asyncio.create_task(agent.run("x")) for _ in range(50)]
        for _ in range(5):
            await asyncio.sleep(0)
        release.set()
        handled += [r.handled_by for r in await asyncio.gather(*runs)]
        release.clear()
        assert inside.most <= 5
    assert handled.count("a") == 30
    assert len(agent.capacity.lanes) == 1
    clock.advance(60)  # the window passed: its calls leave it, the lane takes again
    runs = [asyncio.create_task(agent.run("x")) for _ in range(50)]
    for _ in range(5):
        await asyncio.sleep(0)
    release.set()
    again = [r.handled_by for r in await asyncio.gather(*runs)]
    assert again.count("a") == 5


async def test_the_lane_follows_the_limits_the_store_and_a_reset(clock: FakeClock) -> None:
    a = FunctionProvider(ok, name="a", limits=Limits(rpm=2))
    agent = FallbackAgent([a, FunctionProvider(ok, name="b")], clock=clock, hedge_after=None)
    assert [(await agent.run("x")).handled_by for _ in range(3)] == ["a", "a", "b"]
    reset_default_capacity()  # a new default store: a new, empty limiter
    assert [(await agent.run("x")).handled_by for _ in range(3)] == ["a", "a", "b"]
    a.limits = Limits(rpm=3)  # new limits on the same limiter: 2 taken, 1 left
    assert [(await agent.run("x")).handled_by for _ in range(2)] == ["a", "b"]
    agent.health_store = MemoryHealthStore(clock=clock)  # a store of its own: empty
    assert [(await agent.run("x")).handled_by for _ in range(4)] == ["a", "a", "a", "b"]
    a.budget = Budget(usd=0.01)  # a budget: the lane no longer applies (no price: refused)
    assert (await agent.run("x")).attempts[0].reason == "budget"
