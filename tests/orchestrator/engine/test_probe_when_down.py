"""A provider whose last call spent every retry is down: while a later child can answer, each
call gives it one attempt (a probe), no retries, until it succeeds (issue 17, the benchmark's
"primary down for 60 s, then healthy": served by the fallback, probed, came back)."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError, RetryPolicy
from orchestrator.errors import ServerError
from orchestrator.testing import FakeClock
from tests.conftest import Scripted


def down(n: int) -> list[object]:
    return [ServerError("down", provider="a")] * n


async def test_a_down_provider_is_probed_once_per_call_then_comes_back(clock: FakeClock) -> None:
    a = Scripted("a", [*down(3), *down(1), *down(1), "a is back", *down(1), "retried"])
    b = Scripted("b", ["from b"])
    agent = FallbackAgent([a, b], max_retries=2, clock=clock)
    calls = []
    for _ in range(5):
        result = await agent.run("x")
        calls.append([x.agent for x in result.attempts])
    assert calls == [
        ["a", "a", "a", "b"],  # retries spent: a is down
        ["a", "b"],  # probed once, the fallback answers at once
        ["a", "b"],
        ["a"],  # back
        ["a", "a"],  # and retried again, as any healthy provider
    ]
    assert clock.sleeps == [1.0, 2.0, 1.0]  # no backoff spent on a provider that is down


async def test_a_lone_provider_keeps_its_retries(clock: FakeClock) -> None:
    a = Scripted("a", [*down(3), *down(2), "third time"])
    agent = FallbackAgent([a], max_retries=2, clock=clock)
    with pytest.raises(FallbackError):
        await agent.run("x")
    result = await agent.run("x")
    assert result.text == "third time" and a.calls == 6  # no one else to answer: retried


async def test_off_retries_a_down_provider_every_call(clock: FakeClock) -> None:
    a = Scripted("a", down(100))
    b = Scripted("b", ["from b"])
    policy = RetryPolicy(max_retries=2, probe_when_down=False)
    agent = FallbackAgent([a, b], policy=policy, clock=clock)
    for _ in range(3):
        await agent.run("x")
    assert a.calls == 9


async def test_many_calls_in_flight_during_an_outage_never_multiply(clock: FakeClock) -> None:
    a = Scripted("a", down(10_000))
    b = Scripted("b", ["from b"])
    agent = FallbackAgent([a, b], max_retries=2, retry_strategy="none", clock=clock)
    await agent.run("first")  # learns the outage: 3 attempts
    results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(50)))
    assert {r.handled_by for r in results} == {"b"}
    assert a.calls == 3 + 50  # one probe per call in flight, never three
