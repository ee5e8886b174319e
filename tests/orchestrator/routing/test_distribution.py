"""Done-when figures over 10,000 calls on fake time: Split and weighted land on their
weights, a fixed key always lands in the same arm."""

from __future__ import annotations

import random

import pytest

from orchestrator import FallbackAgent, Split
from orchestrator.testing import FakeClock
from tests.orchestrator.routing.fakes import Timed, shares

CALLS = 10_000


def _ab(clock: FakeClock, seed: int = 7) -> FallbackAgent:
    arms = [Timed("opus_exp", clock), Timed("sonnet", clock)]
    weights = {"opus-experimental": 0.1, "sonnet": 0.9}
    split = Split(weights, children=arms, hedge_after=None, clock=clock, rng=random.Random(seed))
    return FallbackAgent([split, Timed("haiku", clock)], hedge_after=None, clock=clock)


async def test_split_lands_within_one_point_of_its_weights_without_a_key(clock: FakeClock) -> None:
    agent = _ab(clock)
    results = [await agent.run("hi") for _ in range(CALLS)]
    got = shares([r.arm for r in results if r.arm is not None])
    assert got["opus-experimental"] == pytest.approx(0.1, abs=0.01)
    assert got["sonnet"] == pytest.approx(0.9, abs=0.01)
    # The arm is the child that answered (no arm failed), and the order starts with it.
    assert all(
        r.handled_by == ("opus_exp" if r.arm == "opus-experimental" else "sonnet") for r in results
    )


async def test_split_by_key_lands_within_one_point_and_a_key_keeps_its_arm(
    clock: FakeClock,
) -> None:
    agent, replica = _ab(clock, seed=1), _ab(clock, seed=2)
    arms = [(await agent.run("hi", split_key=f"user-{i}")).arm for i in range(CALLS)]
    got = shares([a for a in arms if a is not None])
    assert got["opus-experimental"] == pytest.approx(0.1, abs=0.01)
    for i in range(0, CALLS, 97):  # the same key, another time, another replica: same arm
        assert (await agent.run("again", split_key=f"user-{i}")).arm == arms[i]
        assert (await replica.run("again", affinity=f"user-{i}")).arm == arms[i]


async def test_a_fixed_key_always_lands_in_the_same_arm(clock: FakeClock) -> None:
    agent = _ab(clock)
    arms = {(await agent.run("hi", split_key="user-1234")).arm for _ in range(1_000)}
    assert len(arms) == 1


async def test_weighted_lands_within_one_point_of_its_weights(clock: FakeClock) -> None:
    children = [Timed(n, clock) for n in ("east", "west", "eu")]
    agent = FallbackAgent(
        children,
        order="weighted",
        weights={"east": 0.2, "west": 0.3, "eu": 0.5},
        rng=random.Random(3),
        hedge_after=None,
        clock=clock,
    )
    results = [await agent.run("hi") for _ in range(CALLS)]
    got = shares([r.attempts[0].agent for r in results])
    assert got == pytest.approx({"east": 0.2, "west": 0.3, "eu": 0.5}, abs=0.01)
    # The chosen first child is followed by the others in chain order.
    for r in results[:50]:
        rest = [n for n in ("east", "west", "eu") if n != r.order[0]]
        assert list(r.order[1:]) == rest


async def test_a_split_falls_back_inside_the_split_then_to_the_rest_of_the_chain(
    clock: FakeClock,
) -> None:
    agent = _ab(clock)
    split = agent.children[0]
    assert isinstance(split, Split)
    exp, sonnet = split.children
    assert isinstance(exp, Timed) and isinstance(sonnet, Timed)
    key = "k0"
    for i in range(1000):
        key = f"k{i}"
        if (await agent.run("x", split_key=key)).arm == "opus-experimental":
            break
    exp.down = True
    result = await agent.run("x", split_key=key)
    assert (result.arm, result.handled_by) == ("opus-experimental", "sonnet")
    sonnet.down = True
    result = await agent.run("x", split_key=key)
    assert (result.arm, result.handled_by) == ("opus-experimental", "haiku")
    assert list(dict.fromkeys(a.agent for a in result.attempts)) == ["opus_exp", "sonnet", "haiku"]
    assert result.order == (split.name, "haiku")


async def test_a_streamed_call_is_assigned_the_same_arm_as_a_whole_one(clock: FakeClock) -> None:
    agent = _ab(clock)
    for i in range(50):
        whole = await agent.run("x", split_key=f"user-{i}")
        async with agent.stream("x", split_key=f"user-{i}") as s:
            text = "".join([c async for c in s])
        assert s.result.arm == whole.arm and text == whole.text
