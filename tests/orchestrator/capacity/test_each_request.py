"""Every request sent holds a slot of its own (retries and hedges too), and a nested chain's
spend counts against the outer chain's budget: on fake time, many runs in flight."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import Budget, FallbackAgent, Limits, Request, Response, Usage
from orchestrator.errors import AtCapacity, BudgetExceeded, ServerError
from orchestrator.testing import FakeClock
from tests.conftest import Scripted, health_store

RPM = 5


class Failing(Scripted):
    """Fails every call with a retryable 503; records when each request was sent."""

    def __init__(self, clock: FakeClock, **attrs: object) -> None:
        super().__init__("a", [ServerError("upstream 503", status=503)], clock)
        self.sent: list[float] = []
        for key, value in attrs.items():
            setattr(self, key, value)

    async def complete(self, request: Request) -> Response:
        assert self.clock is not None
        self.sent.append(self.clock.now())
        await asyncio.sleep(0)  # other runs' requests interleave with this one's
        return await super().complete(request)


def most_in_a_window(sent: list[float], window: float) -> int:
    """The most requests in any ``window`` seconds (each starting at a request)."""
    return max(sum(start <= t < start + window for t in sent) for start in sent)


@pytest.mark.parametrize("runs", [1, 8])
async def test_retries_each_take_an_rpm_slot(clock: FakeClock, runs: int) -> None:
    a = Failing(clock, limits=Limits(rpm=RPM))
    b = Scripted("b", ["from b"])
    agent = FallbackAgent(
        [a, b], clock=clock, max_retries=RPM + 2, retry_delay=0.5, hedge_after=None
    )
    results = await asyncio.gather(*(agent.run("x") for _ in range(runs)))
    assert {r.handled_by for r in results} == {"b"}
    assert len(a.sent) == RPM  # one slot per call would let each run send 8
    assert most_in_a_window(a.sent, 60.0) <= RPM
    skipped = [t for r in results for t in r.attempts if t.reason == "at_capacity"]
    assert skipped and all(isinstance(t.error, AtCapacity) for t in skipped)
    assert all(t.attempt_number == 0 for t in skipped)  # no request behind a skip


async def test_a_retry_waits_for_a_slot_under_wait_for_capacity(clock: FakeClock) -> None:
    a = Failing(clock, limits=Limits(rpm=2, window=10))
    agent = FallbackAgent([a], clock=clock, max_retries=2, retry_delay=0.1, wait_for_capacity=30)
    with pytest.raises(Exception):  # noqa: B017 - every request fails: the run fails
        await agent.run("x")
    assert len(a.sent) == 3  # the third request waited for the first to leave the window
    assert a.sent[2] - a.sent[0] >= 10.0
    assert most_in_a_window(a.sent, 10.0) <= 2


async def test_a_retry_gives_back_its_concurrency_slot(clock: FakeClock) -> None:
    store = health_store(clock, threshold=100)
    a = Failing(clock, limits=Limits(rpm=100, tpm=10_000, max_concurrency=1))
    agent = FallbackAgent([a, Scripted("b", ["ok"])], clock=clock, health=store, max_retries=2)
    await asyncio.gather(*(agent.run(Request("x", max_tokens=100)) for _ in range(4)))
    use = store.capacity.usage()["a"]
    assert (use["in_flight"], use["tokens"]) == (0, 0)  # every request's slot settled
    assert use["requests"] == len(a.sent)


async def test_hedges_each_take_a_slot(clock: FakeClock) -> None:
    slow = Scripted("a", [("sleep", 5.0, "late")], clock)
    b = Scripted("b", [("sleep", 5.0, "late b")], clock)
    b.limits = Limits(rpm=2)  # type: ignore[attr-defined]
    agent = FallbackAgent([slow, b], clock=clock, hedge_after=0.1, max_retries=0)
    await asyncio.gather(*(agent.run("x") for _ in range(6)))
    assert b.calls <= 2


def billed(name: str, cost: float) -> Scripted:
    provider = Scripted(name, [Response("ok", usage=Usage(10, 5), cost_usd=cost)])
    provider.price = (1.0, 1.0)  # type: ignore[attr-defined]
    return provider


async def test_a_nested_chains_spend_counts_against_the_outer_budget(clock: FakeClock) -> None:
    inner_provider = billed("inner", 0.3)
    inner = FallbackAgent([inner_provider], name="inner", clock=clock, hedge_after=None)
    last = billed("last", 0.3)
    outer = FallbackAgent(
        [inner, last], clock=clock, budget=Budget(usd=1.0, per="day"), hedge_after=None
    )
    for _ in range(4):  # 4 x 0.3: spent >= 1.0 after the fourth
        assert (await outer.run("x")).handled_by == "inner"
    with pytest.raises(BudgetExceeded):
        await outer.run("x")
    assert (inner_provider.calls, last.calls) == (4, 0)  # no request once it was spent


async def test_the_outer_budget_holds_under_concurrent_nested_runs(clock: FakeClock) -> None:
    inner_provider = billed("inner", 0.1)
    inner = FallbackAgent([inner_provider], name="inner", clock=clock, hedge_after=None)
    outer = FallbackAgent([inner], clock=clock, budget=Budget(usd=1.0), hedge_after=None)
    got = await asyncio.gather(*(outer.run("x") for _ in range(30)), return_exceptions=True)
    assert sum(isinstance(g, BudgetExceeded) for g in got) >= 19
    assert inner_provider.calls * 0.1 <= 1.0 + 0.1 + 1e-9  # over by one call's cost at most
