"""Budgets and limits over loopback HTTP: streams and failed-but-billed replies count.

LiteLLM logged streamed calls at $0, so budgets never fired for them; here a stream
is counted at its final usage, like a whole reply.
"""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import Budget, FallbackAgent, Limits, Request
from orchestrator.errors import BudgetExceeded, FallbackError, RateLimited
from orchestrator.health import MemoryHealthStore
from providers import OpenAIChat
from providers.simulator import Fault, SimulatedServer


def openai(sim: SimulatedServer, name: str, **kwargs: object) -> OpenAIChat:
    return OpenAIChat(
        "gpt-sim",
        base_url=sim.openai_url,
        api_key="sk-sim",
        name=name,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_streams_count_against_the_budget(sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.ok(usage=(100, 100)))  # $0.20 a call at $1,000 / 1M
    agent = FallbackAgent(
        [openai(sim, "a", price=(1000.0, 1000.0))],
        health=MemoryHealthStore(),
        budget=Budget(usd=1.0, per="day"),
        hedge_after=None,
    )
    streamed = 0
    with pytest.raises(BudgetExceeded):
        for _ in range(10):
            async with agent.stream(Request("hi", max_tokens=100)) as stream:
                async for _chunk in stream:
                    pass
            streamed += 1
    assert streamed == sim.count("openai") == 5


async def test_a_billed_reply_that_failed_still_counts(sim: SimulatedServer) -> None:
    # Off-schema replies are billed (InvalidOutput carries their usage): they spend the budget.
    sim.set_default("openai", Fault.ok("not json", usage=(100, 100)))
    agent = FallbackAgent(
        [openai(sim, "a", price=(1000.0, 1000.0))],
        health=MemoryHealthStore(),
        budget=Budget(usd=0.5, per="day"),
        hedge_after=None,
        schema_retries=0,
    )
    for _ in range(3):  # $0.20 each: 0.2, 0.4, 0.6 spent
        with pytest.raises(FallbackError):
            await agent.run(Request("hi", max_tokens=100), schema=dict)
    with pytest.raises(BudgetExceeded):
        await agent.run(Request("hi", max_tokens=100), schema=dict)
    assert sim.count("openai") == 3


async def test_a_hundred_rpm_key_lets_a_hundred_of_a_thousand_through(
    sim: SimulatedServer,
) -> None:
    # LiteLLM #6938: a key limited to 100 RPM let 544 of 1,022 requests through.
    agent = FallbackAgent(
        [openai(sim, "a", limits=Limits(rpm=100))], health=MemoryHealthStore(), hedge_after=None
    )
    passed = limited = 0
    for _ in range(1_022):
        try:
            await agent.run("hi")
            passed += 1
        except RateLimited:
            limited += 1
    assert (passed, limited, sim.count("openai")) == (100, 922, 100)


async def test_retries_count_against_rpm_at_the_simulator(sim: SimulatedServer) -> None:
    # A retry is a request: 20 runs retrying a 503 three times each against rpm=10 once sent
    # 40 requests (10 admitted runs x 4); each request now takes its own slot.
    sim.set_default("openai", Fault.status(503))
    agent = FallbackAgent(
        [openai(sim, "a", limits=Limits(rpm=10))],
        health=MemoryHealthStore(),
        hedge_after=None,
        max_retries=3,
        retry_delay=0.001,
    )
    got = await asyncio.gather(*(agent.run("hi") for _ in range(20)), return_exceptions=True)
    assert all(isinstance(g, FallbackError | RateLimited) for g in got)
    assert sim.count("openai") == 10
