"""Affinity: a conversation's turns stay on the child that served it while that child is
healthy and not skipped; they move when its circuit opens; keys expire after inactivity."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from orchestrator import FallbackAgent, Split
from orchestrator.health import CircuitBreaker, MemoryHealthStore
from orchestrator.routing.state import key_digest
from orchestrator.testing import FakeClock, capture_events
from tests.orchestrator.routing.fakes import Timed

CONVERSATIONS, TURNS = 100, 20


def _agent(clock: FakeClock) -> tuple[FallbackAgent, list[Timed], MemoryHealthStore]:
    children = [Timed(n, clock, 0.001) for n in ("east", "west", "eu")]
    store = MemoryHealthStore(circuit=CircuitBreaker(failure_threshold=1), clock=clock)
    agent = FallbackAgent(
        children,
        order="weighted",
        health=store,
        rng=random.Random(5),
        hedge_after=None,
        clock=clock,
        max_retries=0,
    )
    return agent, children, store


async def _turns(agent: FallbackAgent, turns: int) -> dict[str, list[str]]:
    served: dict[str, list[str]] = defaultdict(list)
    for _ in range(turns):
        for c in range(CONVERSATIONS):
            result = await agent.run("next turn", affinity=f"conversation-{c}")
            served[f"conversation-{c}"].append(result.attempts[0].agent)
    return served


def _kept(served: dict[str, list[str]]) -> float:
    """The share of turns on each conversation's most frequent child."""
    on_one = sum(Counter(turns).most_common(1)[0][1] for turns in served.values())
    return on_one / sum(len(t) for t in served.values())


async def test_affinity_keeps_99_percent_of_turns_on_one_child_while_healthy(
    clock: FakeClock,
) -> None:
    agent, _, _ = _agent(clock)
    served = await _turns(agent, TURNS)
    assert _kept(served) >= 0.99
    first = Counter(turns[0] for turns in served.values())
    assert len(first) == 3  # the strategy spread the conversations; affinity kept them


async def test_affinity_moves_a_conversation_when_its_childs_circuit_opens(
    clock: FakeClock,
) -> None:
    agent, children, store = _agent(clock)
    before = await _turns(agent, 2)
    east = children[0]
    store.record_failure("east")  # one failure in a row opens it (threshold 1)
    calls = east.calls
    after = await _turns(agent, 5)
    assert east.calls == calls  # skipped before any request: not even tried
    moved = [k for k, t in before.items() if t[-1] == "east"]
    assert moved
    for key in moved:
        assert len(set(after[key])) == 1 and after[key][0] != "east"  # moved, then kept
    assert all(after[k][0] == t[-1] for k, t in before.items() if k not in moved)


async def test_a_key_is_forgotten_after_its_ttl_of_inactivity(clock: FakeClock) -> None:
    agent, _, _ = _agent(clock)
    agent.router.affinity_ttl = 60.0
    await agent.run("hi", affinity="conversation-1")
    digest, held = agent.router.held(agent, keys_of("conversation-1"))
    assert held is not None and digest == key_digest(f"{agent.name}\0conversation-1")
    clock.advance(59)
    await agent.run("hi", affinity="conversation-1")  # a turn: the 60 s start again
    clock.advance(59)
    assert agent.router.held(agent, keys_of("conversation-1"))[1] == held
    clock.advance(2)
    assert agent.router.held(agent, keys_of("conversation-1"))[1] is None


def keys_of(affinity: str):  # type: ignore[no-untyped-def]
    from orchestrator.routing.router import Keys

    return Keys.of(affinity, None)


async def test_affinity_works_nested_and_the_key_never_appears_in_events(
    clock: FakeClock,
) -> None:
    inner_agent, _, _ = _agent(clock)
    outer = FallbackAgent([inner_agent, Timed("backup", clock)], hedge_after=None, clock=clock)
    with capture_events() as events:
        kept = {(await outer.run("hi", affinity="user-42")).handled_by for _ in range(50)}
    assert len(kept) == 1
    assert "user-42" not in repr(events)
    assert events[-1]["order"] == (inner_agent.name, "backup")


async def test_a_split_assigns_the_arm_by_the_affinity_key(clock: FakeClock) -> None:
    arms = [Timed("a", clock), Timed("b", clock)]
    split = Split({"a": 0.5, "b": 0.5}, children=arms, hedge_after=None, clock=clock)
    got = {(await split.run("hi", affinity="user-9")).arm for _ in range(20)}
    assert len(got) == 1


@pytest.mark.parametrize("bad", ["", "x" * 1025])
async def test_a_key_that_is_empty_or_too_long_is_refused_without_echoing_it(
    clock: FakeClock, bad: str
) -> None:
    agent, _, _ = _agent(clock)
    with pytest.raises(ValueError, match=r"affinity: \d+ characters") as e:
        await agent.run("hi", affinity=bad)
    assert "xxxx" not in str(e.value)
    with pytest.raises(TypeError, match="split_key: expected a str, got int"):
        await agent.run("hi", split_key=7)  # type: ignore[arg-type]


def test_the_keys_of_a_run_never_show_in_a_repr() -> None:
    from orchestrator.routing.router import Keys

    keys = Keys.of("user-42@example.com", "user-42@example.com")
    assert keys is not None and "user-42" not in repr(keys)
