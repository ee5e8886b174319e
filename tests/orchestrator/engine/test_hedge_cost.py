"""What a hedged call builds (issue 22): its first lane is the run itself, so a call that
never races builds one Run, and a race still keeps each lane's attempts apart. Fake time."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import FallbackAgent, Usage
from orchestrator.engine.run import Run
from orchestrator.errors import ServerError
from orchestrator.testing import FakeClock
from tests.orchestrator.engine.paced import Paced, Ticker
from tests.orchestrator.engine.test_call_cost import Layers


@pytest.fixture
def runs_built(monkeypatch: pytest.MonkeyPatch) -> list[Run]:
    """Every Run built (a call's own, a nested chain's, a hedge lane's)."""
    built: list[Run] = []
    real = Run.__init__

    def counted(self: Run, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Run, "__init__", counted)
    return built


async def test_a_hedged_call_that_never_races_builds_one_run(
    clock: FakeClock, runs_built: list[Run]
) -> None:
    first = Paced("first", clock, [(0.05, "hi"), (0.06, "!")])
    second = Paced("second", clock, [(0.05, "no")])
    agent = FallbackAgent([first, second], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        for _ in range(3):
            result = await agent.run("hello")
            assert result.handled_by == "first" and result.text == "hi!"
            assert [(a.agent, a.attempt_number, a.ok) for a in result.attempts] == [
                ("first", 1, True)
            ]
    assert len(runs_built) == 3  # main: 6 (a second Run for each call's first lane)
    assert second.calls == 0


def _down(clock: FakeClock) -> Paced:
    return Paced("down", clock, [(0.0, ServerError("503", provider="down"))])


async def test_a_race_after_a_failed_child_keeps_each_lanes_attempts_apart(
    clock: FakeClock, runs_built: list[Run]
) -> None:
    # The first lane runs in the run, whose log holds the failed child's attempt already.
    slow = Paced("slow", clock, [(2.0, "slow")])
    fast = Paced("fast", clock, [(0.05, "fast")], usage=Usage(7, 2))
    agent = FallbackAgent([_down(clock), slow, fast], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("twelve chars")
    assert result.handled_by == "fast" and result.text == "fast"
    down, lost, won = result.attempts
    assert (down.agent, down.attempt_number, down.reason) == ("down", 1, "error")
    assert (lost.agent, lost.attempt_number, lost.reason) == ("slow", 1, "hedge_lost")
    assert (won.agent, won.attempt_number, won.ok) == ("fast", 1, True)
    assert "usage estimated" in (lost.note or "") and "hedge: slow" in (won.note or "")
    # The hedge is told of what was tried before the race, not of the lane it races.
    told = fast.requests[0].metadata["handover"]
    assert told["reason"] == "hedge" and [a["agent"] for a in told["attempts"]] == ["down"]
    assert len(runs_built) == 2  # the call's, and the hedge's lane


async def test_a_first_lane_that_wins_a_race_is_recorded_last(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(0.5, "slow")])
    late = Paced("late", clock, [(2.0, "late")])
    agent = FallbackAgent([_down(clock), slow, late], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("twelve chars")
    assert result.handled_by == "slow" and result.text == "slow"
    assert [(a.agent, a.attempt_number, a.reason) for a in result.attempts] == [
        ("down", 1, "error"),
        ("late", 1, "hedge_lost"),
        ("slow", 1, None),
    ]
    assert late.open == 0


async def test_a_hedged_call_is_driven_through_no_layer_that_only_forwards() -> None:
    provider, other = Layers(), Layers()
    other.name = "other"
    agent = FallbackAgent([provider, other])  # the default hedge: run() streams, raced
    assert (await agent.run("hi")).text == "ok"
    # main: ... "race", "first", "drive" ... (a coroutine of the race that only awaited,
    # and a generator that only started the one after it)
    assert provider.seen == [
        "execute", "_chain", "next_child", "race", "resume", "run_in", "attempt",
        "_assembled", "_assembled", "_whole",  # the racer's, its loop, a whole reply as a stream
    ]  # fmt: skip
