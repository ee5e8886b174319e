"""Issue 17 item 18: a timeout hands over at once when a later child can take the call; the
silent provider's retries are spent only if the later children fail (``retried_last``)."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError, RetryPolicy
from orchestrator.errors import ProviderTimeout, ServerError
from orchestrator.testing import FakeClock
from tests.conftest import Scripted

SILENT = ("sleep", 100.0, "too late")


async def test_a_silent_provider_hands_over_at_once(clock: FakeClock) -> None:
    a = Scripted("a", [SILENT], clock=clock)
    b = Scripted("b", ["from b"])
    agent = FallbackAgent([a, b], attempt_timeout=30.0, max_retries=2, clock=clock)
    result = await agent.run("x")
    assert (result.text, result.handled_by) == ("from b", "b")
    assert (a.calls, b.calls) == (1, 1)
    assert clock.sleeps == []  # no backoff waited for a provider that said nothing
    assert [(x.agent, x.reason) for x in result.attempts] == [("a", "timeout"), ("b", None)]


async def test_the_silent_provider_gets_its_retries_when_the_others_fail(
    clock: FakeClock,
) -> None:
    a = Scripted("a", [SILENT, "a came back"], clock=clock)
    b = Scripted("b", [ServerError("down", provider="b")])
    agent = FallbackAgent([a, b], attempt_timeout=30.0, max_retries=2, clock=clock)
    result = await agent.run("x")
    assert result.handled_by == "a" and result.text == "a came back"
    order = [(x.agent, x.attempt_number) for x in result.attempts]
    assert order == [("a", 1), ("b", 1), ("b", 2), ("b", 3), ("a", 2)]
    assert "retried last" in (result.attempts[-1].note or "")


async def test_retries_spent_last_still_end_in_fallback_error(clock: FakeClock) -> None:
    a = Scripted("a", [SILENT], clock=clock)
    b = Scripted("b", [ServerError("down", provider="b")])
    agent = FallbackAgent([a, b], attempt_timeout=30.0, max_retries=2, clock=clock)
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    order = [(x.agent, x.attempt_number) for x in info.value.attempts]
    assert order == [("a", 1), ("b", 1), ("b", 2), ("b", 3), ("a", 2), ("a", 3)]
    assert a.calls == 3  # never more than its policy allows, deferred or not


async def test_coming_back_keeps_the_run_deadline(clock: FakeClock) -> None:
    a = Scripted("a", [("sleep", 31.0, "too late")], clock=clock)
    b = Scripted("b", [ServerError("down", provider="b")])
    agent = FallbackAgent(
        [a, b],
        attempt_timeout=30.0,
        timeout=45.0,
        max_retries=2,
        retry_strategy="none",
        clock=clock,
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    last = info.value.attempts[-1]
    # The retry that came back was cut by the caller's budget, and no third one started.
    assert (last.agent, last.attempt_number, last.reason) == ("a", 2, "deadline")
    assert isinstance(last.error, ProviderTimeout) and a.calls == 2


async def test_off_retries_a_timeout_at_once(clock: FakeClock) -> None:
    a = Scripted("a", [SILENT, "a retried"], clock=clock)
    b = Scripted("b", ["from b"])
    now = RetryPolicy(max_retries=2, retry_timeouts_last=False)
    agent = FallbackAgent([a, b], attempt_timeout=30.0, policy=now, clock=clock)
    result = await agent.run("x")
    assert result.handled_by == "a" and b.calls == 0


async def test_a_last_child_that_times_out_is_retried_at_once(clock: FakeClock) -> None:
    b = Scripted("b", [SILENT, "b retried"], clock=clock)
    agent = FallbackAgent([b], attempt_timeout=30.0, max_retries=2, clock=clock)
    result = await agent.run("x")
    assert result.handled_by == "b" and b.calls == 2  # no one to hand over to: retry


async def test_many_runs_in_flight_each_defer_their_own(clock: FakeClock) -> None:
    a = Scripted("a", [SILENT], clock=clock)
    b = Scripted("b", [ServerError("down", provider="b"), "from b"])
    agent = FallbackAgent([a, b], attempt_timeout=30.0, max_retries=1, clock=clock)
    results = await asyncio.gather(
        *(agent.run(f"call {i}") for i in range(40)), return_exceptions=True
    )
    handled = [r.handled_by for r in results if not isinstance(r, BaseException)]
    assert len(handled) == 40 and set(handled) <= {"a", "b"}
    assert a.calls <= 2 * 40  # each run spends at most its own retries on the silent one
