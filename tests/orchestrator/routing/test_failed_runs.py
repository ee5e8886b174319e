"""A run that fails says, like a Result, the order it tried its children in and the
Split arm the call was assigned to: a failed experiment call can be read off its
FallbackError (which still holds no request text, and pickles)."""

from __future__ import annotations

import pickle

import pytest

from orchestrator import FallbackAgent, FallbackError, Split
from orchestrator.testing import FakeClock
from tests.orchestrator.routing.fakes import Timed

PROMPT = "secret plan for the quarterly numbers"


def _down(clock: FakeClock, *names: str) -> list[Timed]:
    kids = [Timed(n, clock, 0.01) for n in names]
    for kid in kids:
        kid.down = True
    return kids


def _split(clock: FakeClock, experiment: float) -> Split:
    """An A/B split of two children that fail (opus: the experiment, sonnet: control)."""
    weights = {"experiment": experiment, "control": 1 - experiment}
    kids = _down(clock, "opus", "sonnet")
    return Split(weights, children=kids, hedge_after=None, clock=clock, max_retries=0)


async def _failure(agent: FallbackAgent, **kw: str) -> FallbackError:
    with pytest.raises(FallbackError) as caught:
        await agent.run(PROMPT, **kw)
    error = caught.value
    assert PROMPT not in str(error) and PROMPT not in repr(error)
    again = pickle.loads(pickle.dumps(error))
    assert (again.order, again.arm) == (error.order, error.arm)
    return error


async def test_a_plain_chains_error_names_the_order_it_used(clock: FakeClock) -> None:
    kids = _down(clock, "east", "west", "eu")
    for kid, price in zip(kids, (3.0, 1.0, 2.0), strict=True):
        kid.price = (price, price)  # type: ignore[attr-defined]  # USD per 1M tokens
    agent = FallbackAgent(kids, order="cost", hedge_after=None, clock=clock, max_retries=0)
    error = await _failure(agent)
    assert error.order == ("west", "eu", "east")  # main: no order on the error
    assert error.arm is None
    assert [a.agent for a in error.attempts] == list(error.order)


async def test_a_splits_error_names_its_arm_and_order(clock: FakeClock) -> None:
    split = _split(clock, 0.5)
    seen = set()
    for i in range(20):
        error = await _failure(split, split_key=f"user-{i}")
        assert error.arm in ("experiment", "control")
        assert error.order[0] == ("opus" if error.arm == "experiment" else "sonnet")
        seen.add(error.arm)
    assert seen == {"experiment", "control"}


async def test_a_nested_splits_arm_reaches_the_outer_chains_error(clock: FakeClock) -> None:
    split = _split(clock, 0.1)
    agent = FallbackAgent(
        [split, *_down(clock, "haiku")], hedge_after=None, clock=clock, max_retries=0
    )
    error = await _failure(agent, split_key="user-7")
    assert error.order == (split.name, "haiku")
    assert error.arm in ("experiment", "control")
    # The same key, the same arm: the error tells which arm a failed call was in.
    assert (await _failure(agent, split_key="user-7")).arm == error.arm
