"""A healthy run is freed by reference counting, not left to the collector.

A gateway worker runs thousands of calls a second with metrics on; a reference cycle
per run (a hedged call's race, its lanes and their racers; the run, its attempt log,
its trace) makes every call's objects wait for a collection pass, which under load
was a large share of the worker's CPU. Checked with the collector off: no Run may
outlive its call, with telemetry off and on. (A failed attempt's exception holds its
traceback's frames, a cycle Python itself makes: the healthy path is what counts.)
"""

from __future__ import annotations

import gc

from orchestrator import FallbackAgent, Request
from orchestrator.engine.run import Run
from providers import FunctionProvider
from tests.orchestrator.telemetry.conftest import Otel


def runs_alive() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Run)


async def answers(request: Request) -> str:
    return "ok"


def ours(objects: list[object]) -> list[str]:
    """The library's own objects among ``objects`` (the test process may leave others)."""
    return [
        type(o).__qualname__
        for o in objects
        if type(o).__module__.startswith(("orchestrator.", "providers."))
    ]


async def left_behind() -> tuple[int, list[str]]:
    """Runs alive, and the library's objects the collector found unreachable, after 20
    healthy hedged runs with the collector off."""
    agent = FallbackAgent(
        [FunctionProvider(answers, name="a"), FunctionProvider(answers, name="b")]
    )
    assert agent.hedge is not None  # the default: every call runs in a race's lane
    await agent.run("warm")
    gc.collect()
    before = runs_alive()
    gc.disable()
    try:
        for _ in range(20):
            assert (await agent.run("hi")).text == "ok"
        alive = runs_alive() - before
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a pass finds unreachable is kept to be read
        gc.collect()
        left = alive, ours(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return left


async def test_a_healthy_run_leaves_no_cycle() -> None:
    assert await left_behind() == (0, [])


async def test_a_healthy_run_with_telemetry_on_leaves_no_cycle(otel: Otel) -> None:
    assert await left_behind() == (0, [])
    assert otel.points("failover.attempts")  # telemetry was on
