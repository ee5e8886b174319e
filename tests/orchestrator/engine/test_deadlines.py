"""Timeouts, deadlines and cancellation (fake time; cancellation on the real loop)."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError, Request
from orchestrator.errors import ProviderTimeout, ServerError
from orchestrator.policy import RetryPolicy
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.conftest import Scripted, health_store, wait_until_cancelled


async def test_attempt_timeout_records_provider_timeout_and_retries(clock: FakeClock) -> None:
    a = Scripted("a", [("sleep", 100.0, "too late")], clock=clock)
    b = Scripted("b", ["ok"])
    # Retried at once, not last (the default: test_retried_last): the schedule under test.
    now = RetryPolicy(max_retries=1, delay=1.0, retry_timeouts_last=False)
    agent = FallbackAgent([a, b], attempt_timeout=5.0, policy=now, hedge_after=None, clock=clock)
    result = await agent.run("x")
    assert result.handled_by == "b"
    errs = [x.error for x in result.attempts[:2]]
    assert all(isinstance(e, ProviderTimeout) and isinstance(e, TimeoutError) for e in errs)
    assert [x.reason for x in result.attempts[:2]] == ["timeout", "timeout"]
    assert "attempt_timeout=5.0" in str(errs[0])
    assert clock.sleeps == [1.0]


async def test_run_deadline_raises_fallback_error_with_the_timed_out_attempt(
    clock: FakeClock,
) -> None:
    a = Scripted("a", [("sleep", 100.0, "too late")], clock=clock)
    b = Scripted("b", ["never"])
    fired: list[object] = []
    agent = FallbackAgent(
        [a, b],
        timeout=10.0,
        clock=clock,
        on_all_failed=lambda errors: fired.append(errors),
        hedge_after=None,  # the deadline alone, not a hedge racing it (test_hedging)
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    attempts = info.value.attempts
    assert len(attempts) == 1 and attempts[0].reason == "deadline"
    assert isinstance(attempts[0].error, ProviderTimeout)
    assert b.calls == 0 and len(fired) == 1


async def test_no_backoff_sleep_starts_that_would_end_past_the_deadline(clock: FakeClock) -> None:
    a = Scripted("a", [ServerError("x")])
    b = Scripted("b", ["ok"])
    agent = FallbackAgent([a, b], timeout=5.0, max_retries=3, retry_delay=2.0, clock=clock)
    result = await agent.run("x")
    # 2 s fits in the 5 s budget, then 4 s would end at 6 s: fall over instead.
    assert clock.sleeps == [2.0]
    assert result.handled_by == "b"
    assert result.attempts[1].note == "backoff would end past the run's deadline"


async def test_per_call_timeout_overrides_agent_timeout(clock: FakeClock) -> None:
    a = Scripted("a", [("sleep", 3.0, "slowish")], clock=clock)
    agent = FallbackAgent([a], timeout=1.0, clock=clock)
    result = await agent.run("x", timeout=10.0)
    assert result.text == "slowish"


async def test_real_clock_attempt_timeout_cuts_a_hanging_call() -> None:
    async def hang(req: Request) -> str:
        await asyncio.Event().wait()
        return "never"

    agent = FallbackAgent(
        [FunctionProvider(hang), FunctionProvider(lambda r: "ok", name="ok")],
        attempt_timeout=0.05,
        max_retries=0,
        hedge_after=None,  # the attempt timeout alone, not a hedge racing it (test_hedging)
    )
    result = await agent.run("x")
    assert result.handled_by == "ok"
    assert isinstance(result.attempts[0].error, ProviderTimeout)
    assert 0.04 < result.attempts[0].duration < 1.0


async def test_provider_own_timeout_error_is_not_relabelled(clock: FakeClock) -> None:
    own = TimeoutError("provider said so")
    a = Scripted("a", [own])
    agent = FallbackAgent(
        [a, Scripted("b", ["ok"])], attempt_timeout=50, max_retries=0, clock=clock
    )
    result = await agent.run("x")
    assert result.attempts[0].error is own


async def test_cancellation_propagates_and_leaves_nothing_behind() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()
    fired: list[str] = []

    async def slow(req: Request) -> str:
        started.set()
        await wait_until_cancelled(cancelled)
        return "never"

    agent = FallbackAgent(
        [FunctionProvider(slow), FunctionProvider(lambda r: "b", name="b")],
        on_fallback=lambda *a: fired.append("fallback"),
        on_all_failed=lambda e: fired.append("all"),
        on_retry=lambda *a: fired.append("retry"),
    )
    before = asyncio.all_tasks()
    task = asyncio.create_task(agent.run("x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    assert fired == []
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before


async def test_cancelling_during_backoff_sleep() -> None:
    fired: list[str] = []
    calls = 0

    async def flaky(req: Request) -> str:
        nonlocal calls
        calls += 1
        raise ServerError("x")

    agent = FallbackAgent(
        [FunctionProvider(flaky), FunctionProvider(lambda r: "b", name="b")],
        max_retries=3,
        retry_delay=30.0,
        on_fallback=lambda *a: fired.append("fallback"),
    )
    task = asyncio.create_task(agent.run("x"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 1 and fired == []


async def test_hooks_that_use_up_the_deadline_do_not_start_or_blame_the_next_child(
    clock: FakeClock,
) -> None:
    backup = Scripted("backup", ["ok"])
    health = health_store(clock, threshold=1)
    agent = FallbackAgent(
        [Scripted("a", [RuntimeError("x")]), backup],
        max_retries=0,
        timeout=5.0,
        clock=clock,
        health=health,
        on_fallback=lambda f, t, e: clock.advance(10),
    )
    with pytest.raises(FallbackError):
        await agent.run("x")
    assert backup.calls == 0 and health.snapshot("backup").state == "closed"


async def test_deadline_timeouts_do_not_count_against_the_provider(clock: FakeClock) -> None:
    health = health_store(clock, threshold=1)
    slow = Scripted("slow", [("sleep", 100.0, "late")], clock=clock)
    agent = FallbackAgent([slow], timeout=5.0, health=health, clock=clock)
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert info.value.attempts[0].reason == "deadline"
    assert health.snapshot("slow").state == "closed"


async def test_fake_clock_cuts_an_attempt_whose_deadline_already_passed() -> None:
    clock = FakeClock()
    hang = Scripted("hang", [("sleep", 1000.0, "late")], clock=clock)
    agent = FallbackAgent(
        [Scripted("a", [RuntimeError("x")]), hang],
        max_retries=0,
        timeout=5,
        clock=clock,
        before_fallback=lambda r, why: (clock.advance(10), r)[1],
    )
    with pytest.raises(FallbackError):
        await agent.run("x")
    assert hang.calls == 0
    with pytest.raises(ValueError, match="timeout"):
        await agent.run("x", timeout=0)
