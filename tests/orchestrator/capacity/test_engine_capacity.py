"""Limits and budgets on a run, on fake time: skip at capacity, wait, settle, budgets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import Budget, FallbackAgent, Limits, Request, Response, Usage
from orchestrator.capacity import Ticket
from orchestrator.engine.serving import explain
from orchestrator.errors import AtCapacity, BudgetExceeded, BudgetSpent, RateLimited
from orchestrator.testing import FakeClock, capture_events
from tests.conftest import InFlight, Scripted, health_store


def limited(name: str, clock: FakeClock | None = None, **attrs: Any) -> Scripted:
    provider = Scripted(name, [Response("ok", usage=Usage(10, 5), cost_usd=0.25)], clock)
    for key, value in attrs.items():
        setattr(provider, key, value)
    return provider


async def test_a_child_at_its_rpm_is_skipped_without_a_request(clock: FakeClock) -> None:
    a, b = limited("a", limits=Limits(rpm=2)), limited("b")
    agent = FallbackAgent([a, b], clock=clock, health=health_store(clock))
    assert [(await agent.run("hi")).handled_by for _ in range(3)] == ["a", "a", "b"]
    assert (a.calls, b.calls) == (2, 1)
    clock.advance(10)
    result = await agent.run("hi")
    skipped = result.attempts[0]
    assert (skipped.agent, skipped.reason, skipped.attempt_number) == ("a", "at_capacity", 0)
    assert isinstance(skipped.error, AtCapacity)
    assert skipped.error.retry_after == pytest.approx(50.0)  # the first call leaves the window
    assert clock.sleeps == []  # the next child at once
    clock.advance(50)
    assert (await agent.run("hi")).handled_by == "a"


async def test_every_child_at_capacity_raises_rate_limited_with_the_soonest(
    clock: FakeClock,
) -> None:
    a, b = limited("a", limits=Limits(rpm=1)), limited("b", limits=Limits(rpm=1, window=30))
    agent = FallbackAgent([a, b], clock=clock, health=health_store(clock))
    await agent.run("x")
    await agent.run("x")
    clock.advance(5)
    with pytest.raises(RateLimited) as raised:
        await agent.run("x")
    assert raised.value.retry_after == pytest.approx(25.0)
    assert (a.calls, b.calls) == (1, 1)


async def test_wait_for_capacity_waits_for_the_soonest_slot(clock: FakeClock) -> None:
    a = limited("a", limits=Limits(rpm=1))
    agent = FallbackAgent([a], clock=clock, health=health_store(clock), wait_for_capacity=120)
    await agent.run("x")
    with capture_events() as events:
        assert (await agent.run("x")).handled_by == "a"
    assert clock.sleeps == [pytest.approx(60.0)] and a.calls == 2
    assert [e["event"] for e in events if e["event"] == "capacity_wait"] == ["capacity_wait"]


async def test_wait_for_capacity_never_waits_past_the_deadline(clock: FakeClock) -> None:
    a = limited("a", limits=Limits(rpm=1))
    agent = FallbackAgent(
        [a], clock=clock, health=health_store(clock), wait_for_capacity=120, timeout=30
    )
    await agent.run("x")
    with pytest.raises(RateLimited):
        await agent.run("x")
    assert clock.sleeps == [] and a.calls == 1


async def test_tokens_are_reserved_then_settled_on_the_reported_usage(clock: FakeClock) -> None:
    store = health_store(clock)
    a = limited("a", limits=Limits(tpm=1000))
    agent = FallbackAgent([a], clock=clock, health=store)
    await agent.run(Request("hello there", max_tokens=900))  # reserves ~903, settles 15
    assert store.capacity.usage()["a"]["tokens"] == 15
    await agent.run(Request("hello there", max_tokens=900))  # fits only since it settled
    assert a.calls == 2


async def test_a_failed_call_gives_back_what_it_did_not_use(clock: FakeClock) -> None:
    store = health_store(clock)
    failing = Scripted("a", [RateLimited("busy", retry_after=None)])
    failing.limits = Limits(tpm=1000, max_concurrency=1)  # type: ignore[attr-defined]
    agent = FallbackAgent([failing, limited("b")], clock=clock, health=store, max_retries=0)
    await agent.run(Request("hello", max_tokens=500))
    use = store.capacity.usage()["a"]
    assert (use["tokens"], use["in_flight"], use["requests"]) == (0, 0, 1)


async def test_max_concurrency_holds_under_many_calls_in_flight(clock: FakeClock) -> None:
    release = asyncio.Event()
    inside = InFlight()

    async def slow(request: Request) -> Response:
        with inside:
            await release.wait()
        return Response("slow")

    a = Scripted("a", ["x"])
    a.complete = slow  # type: ignore[method-assign]
    a.limits = Limits(max_concurrency=5)  # type: ignore[attr-defined]
    b = limited("b")
    agent = FallbackAgent([a, b], clock=clock, health=health_store(clock), hedge_after=None)
    runs = [asyncio.create_task(agent.run("x")) for _ in range(50)]
    for _ in range(5):
        await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*runs)
    assert inside.most == 5
    assert sum(r.handled_by == "a" for r in results) == 5
    assert sum(r.handled_by == "b" for r in results) == 45


async def test_a_spent_provider_budget_skips_it_with_reason_budget(clock: FakeClock) -> None:
    a = limited("a", budget=Budget(usd=0.5, per="day"), price=(1.0, 1.0))
    agent = FallbackAgent([a, limited("b")], clock=clock, health=health_store(clock))
    handled = [(await agent.run("x")).handled_by for _ in range(3)]
    assert handled == ["a", "a", "b"]  # 0.25 + 0.25 spent: the third is skipped
    result = await agent.run("x")
    assert result.attempts[0].reason == "budget"
    assert isinstance(result.attempts[0].error, BudgetSpent)


async def test_a_spent_chain_budget_ends_the_run_before_any_request(clock: FakeClock) -> None:
    a, b = limited("a", price=(1.0, 1.0)), limited("b", price=(1.0, 1.0))
    agent = FallbackAgent(
        [a, b], clock=clock, health=health_store(clock), budget=Budget(usd=0.5, per="hour")
    )
    await agent.run("x")
    await agent.run("x")
    with pytest.raises(BudgetExceeded):
        await agent.run("x")
    assert (a.calls, b.calls, clock.sleeps) == (2, 0, [])
    clock.advance(3600)  # the next hour
    assert (await agent.run("x")).handled_by == "a"


async def test_a_provider_with_no_price_is_refused_by_a_budget_by_default(
    clock: FakeClock,
) -> None:
    a, b = limited("a"), limited("b", price=(1.0, 1.0))
    agent = FallbackAgent([a, b], clock=clock, budget=Budget(usd=5))
    result = await agent.run("x")
    assert (result.handled_by, result.attempts[0].reason, a.calls) == ("b", "budget", 0)
    counted = FallbackAgent([a], clock=clock, budget=Budget(usd=5), budget_unpriced=(3.0, 15.0))
    assert (await counted.run("x")).handled_by == "a"


async def test_explain_peeks_at_limits_and_budgets_without_taking(clock: FakeClock) -> None:
    store = health_store(clock)
    a = limited("a", limits=Limits(rpm=1))
    b = limited("b", budget=Budget(usd=0.1), price=(1.0, 1.0))
    agent = FallbackAgent([a, b], clock=clock, health=store)
    assert [v.skipped for v in explain(agent, Request("x"))] == [None, None]
    await agent.run("x")
    ticket = await store.capacity.take(_want_of(agent, b))
    assert isinstance(ticket, Ticket)
    store.capacity.settle(ticket, tokens=0, cost=1.0)  # b's budget spent elsewhere
    skipped = [v.skipped for v in explain(agent, Request("x"))]
    assert [type(e) for e in skipped] == [AtCapacity, BudgetSpent]
    assert store.capacity.usage()["a"]["requests"] == 1  # explain took nothing


def _want_of(agent: FallbackAgent, provider: Any) -> Any:
    from orchestrator.engine.capacity import want_of

    return want_of(agent.name, agent.capacity, provider, Request("x"))


def test_limits_and_budgets_are_validated_once() -> None:
    with pytest.raises(ValueError, match=r"Limits\.rpm=0 must be an integer >= 1"):
        Limits(rpm=0)
    with pytest.raises(ValueError, match=r"Limits\.tpm"):
        Limits(tpm=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Budget\.usd"):
        Budget(usd=float("nan"))
    with pytest.raises(ValueError, match=r"Budget\.per='week'"):
        Budget(usd=1, per="week")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="budget: expected Budget"):
        FallbackAgent([limited("a")], budget=5)  # type: ignore[arg-type]
