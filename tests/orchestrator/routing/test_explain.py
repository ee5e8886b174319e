"""``explain`` runs the same step as a run: over 1,000 runs of each strategy (same seeded
randomness, same store state), the order it shows is the order the run tried."""

from __future__ import annotations

import random

import pytest

from orchestrator import Attempt, FallbackAgent, FallbackError, Request, Response, Split
from orchestrator.engine.serving import Verdict, explain
from orchestrator.errors import ServerError
from orchestrator.health import CircuitBreaker, MemoryHealthStore
from orchestrator.routing.router import Keys
from orchestrator.testing import FakeClock

RUNS = 1_000


class Flaky:
    """Fails a share of calls (a seeded draw), answers after a latency of its own."""

    def __init__(self, name: str, clock: FakeClock, fail: float, latency: float, seed: int):
        self.name, self.clock, self.fail, self.latency = name, clock, fail, latency
        self.rng = random.Random(seed)
        self.price = (latency * 10, latency * 20)

    async def complete(self, request: Request) -> Response:
        self.clock.advance(self.latency)
        if self.rng.random() < self.fail:
            raise ServerError("503", provider=self.name)
        return Response(self.name)


def _agent(clock: FakeClock, order: str) -> FallbackAgent:
    kids = [
        Flaky("a", clock, 0.3, 0.02, 1),
        Flaky("b", clock, 0.05, 0.01, 2),
        Flaky("c", clock, 0.5, 0.005, 3),
    ]
    # Circuits open on evidence (30% of 20 calls) and stay open past the test's fake time.
    breaker = CircuitBreaker(failure_ratio=0.3, min_calls=20, window=5, cooldown=600)
    store = MemoryHealthStore(circuit=breaker, clock=clock)
    common = {"hedge_after": None, "clock": clock, "max_retries": 0, "health": store}
    if order == "split":
        split = Split({"x": 0.3, "y": 0.7}, children=kids[:2], rng=random.Random(4), **common)
        return FallbackAgent([split, kids[2]], **common)  # type: ignore[arg-type]
    return FallbackAgent(kids, order=order, rng=random.Random(4), **common)  # type: ignore[arg-type]


def _tried(agent: FallbackAgent, attempts: tuple[object, ...]) -> list[str]:
    """The top-level children a run touched, in order (skipped ones included)."""
    nested = [(m.name, getattr(m, "agent", None)) for m in agent.members]
    owner = {p.name: name for name, inner in nested if inner for p in inner.members}
    seen: list[str] = []
    for a in attempts:
        name = owner.get(a.agent, a.agent)  # type: ignore[attr-defined]
        if name not in seen:
            seen.append(name)
    return seen


def _same_skips(verdicts: tuple[Verdict, ...], attempts: tuple[Attempt, ...]) -> int:
    """The children a run skipped without a request are the ones shown skipped, in order."""
    names = {v.name for v in verdicts}
    skipped = [a.agent for a in attempts if a.attempt_number == 0 and a.agent in names]
    assert skipped == [v.name for v in verdicts if v.skipped][: len(skipped)]
    return len(skipped)


@pytest.mark.parametrize(
    "order", ["priority", "weighted", "least_busy", "latency", "cost", "split"]
)
async def test_explain_matches_the_order_of_1000_runs(clock: FakeClock, order: str) -> None:
    agent = _agent(clock, order)
    skipped_seen = 0
    for i in range(RUNS):
        keys = Keys.of(f"conversation-{i % 37}", None) if i % 2 else None
        verdicts = explain(agent, Request("hi"), keys)
        shown = [v.name for v in verdicts]
        kw = {"affinity": keys.affinity} if keys is not None else {}
        try:
            result = await agent.run("hi", **kw)  # type: ignore[arg-type]
            attempts = result.attempts
            assert list(result.order) == shown
        except FallbackError as e:
            attempts = tuple(e.attempts)
        tried = _tried(agent, attempts)
        assert tried == shown[: len(tried)], (i, tried, shown)
        skipped_seen += _same_skips(verdicts, attempts)
        if verdicts[0].inner:  # the split: its own order, skips and arm as shown
            inner = verdicts[0].inner
            inside = [a for a in attempts if a.agent in {v.name for v in inner}]
            tried_inside = list(dict.fromkeys(a.agent for a in inside))
            assert tried_inside == [v.name for v in inner][: len(tried_inside)]
            skipped_seen += _same_skips(inner, tuple(inside))
            if isinstance(attempts, tuple) and tried_inside:
                assert inner[0].name == ("a" if verdicts[0].arm == "x" else "b")
    assert skipped_seen > 0  # circuits opened along the way: explain saw them too
