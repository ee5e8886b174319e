"""Hedged requests: the next child starts in parallel when the current one is slow (fake time)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError, Request, Stop, Usage
from orchestrator.engine.hedge_delay import AUTO_AFTER
from orchestrator.engine.hedging import FLOOR, MIN_SAMPLES, TAIL_CAP, Hedging
from orchestrator.errors import ServerError
from orchestrator.health import MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock, capture_events
from tests.conftest import Scripted
from tests.orchestrator.engine.paced import HANG, Paced, Ticker


def slow_and_fast(clock: FakeClock, slow_at: float = 2.0, fast_at: float = 0.05) -> list[Paced]:
    return [
        Paced("slow", clock, [(slow_at, "slow"), (slow_at + 0.01, "!")]),
        Paced("fast", clock, [(fast_at, "fast"), (fast_at + 0.01, "!")], usage=Usage(7, 2)),
    ]


async def test_the_hedge_wins_and_the_slow_primary_is_cancelled_and_recorded(
    clock: FakeClock,
) -> None:
    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("twelve chars")
    assert result.handled_by == "fast" and result.text == "fast!"
    assert 0.45 <= result.latency <= 0.48
    lost, won = result.attempts
    assert (lost.agent, lost.reason, lost.error) == ("slow", "hedge_lost", None)
    assert lost.usage == Usage(3, 0) and "usage estimated" in (lost.note or "")
    assert won.ok and "hedge: slow had no content after 0.4" in (won.note or "")
    assert result.usage == Usage(10, 2)
    assert slow.open == 0 and slow.closed == 1 and fast.open == 0


async def test_no_hedge_when_the_primary_answers_in_time(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock, slow_at=0.1)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "slow" and fast.calls == 0 and len(result.attempts) == 1


async def test_the_primary_can_still_win_after_the_hedge_started(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock, slow_at=0.5, fast_at=1.0)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "slow"
    assert [a.reason for a in result.attempts] == ["hedge_lost", None]
    assert result.attempts[-1].agent == "slow" and fast.calls == 1 and fast.open == 0


async def test_streaming_delivers_only_the_winners_chunks(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock, slow_at=0.55, fast_at=0.1)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock), agent.stream("hi") as s:
        chunks = [c async for c in s]
    assert chunks == ["fast", "!"] and s.result.handled_by == "fast"


async def test_max_hedges_two_starts_a_third_child_and_cancels_both_losers(
    clock: FakeClock,
) -> None:
    a, b = slow_and_fast(clock, slow_at=5.0, fast_at=5.0)
    c = Paced("c", clock, [(0.05, "third")])
    agent = FallbackAgent([a, b, c], hedge_after=0.2, max_hedges=2, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "c" and 0.45 <= result.latency <= 0.48
    assert [(x.agent, x.reason) for x in result.attempts] == [
        ("slow", "hedge_lost"),
        ("fast", "hedge_lost"),
        ("c", None),
    ]
    assert a.open == b.open == 0


async def test_before_fallback_sees_reason_hedge_and_redacts_the_hedge(clock: FakeClock) -> None:
    seen: list[str] = []

    def redact(request: Request, reason: str) -> Request:
        seen.append(reason)
        return request.replace(prompt="[redacted]")

    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, before_fallback=redact, clock=clock)
    async with Ticker(clock):
        await agent.run("secret")
    assert seen == ["hedge"]
    assert fast.requests[0].prompt == "[redacted]" and slow.requests[0].prompt == "secret"
    assert fast.requests[0].metadata["handover"]["reason"] == "hedge"


async def test_a_stop_from_before_fallback_means_no_hedge(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock, slow_at=0.6)
    agent = FallbackAgent(
        [slow, fast], hedge_after=0.4, before_fallback=lambda r, why: Stop(), clock=clock
    )
    with capture_events() as logs:
        async with Ticker(clock):
            result = await agent.run("hi")
    assert result.handled_by == "slow" and fast.calls == 0
    assert any(e["event"] == "hedge_skipped" for e in logs)


async def test_no_hedge_to_an_open_circuit_nor_without_budget(clock: FakeClock) -> None:
    store = MemoryHealthStore(clock=clock)
    store.record_failure("fast", retry_after=30)  # opens its circuit for 30 s
    slow, fast = slow_and_fast(clock, slow_at=0.6)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, health=store, clock=clock)
    async with Ticker(clock):
        assert (await agent.run("hi")).handled_by == "slow"
    assert fast.calls == 0

    empty = MemoryHealthStore(budget=RetryBudget(ratio=0.0, min_per_second=0.0), clock=clock)
    slow, fast = slow_and_fast(clock, slow_at=0.6)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, health=empty, clock=clock)
    async with Ticker(clock):
        assert (await agent.run("hi")).handled_by == "slow"
    assert fast.calls == 0


async def test_a_hedge_draws_a_token_from_the_retry_budget(clock: FakeClock) -> None:
    store = MemoryHealthStore(clock=clock)
    taken: list[bool] = []
    real = store.try_acquire_retry

    def spy() -> bool:
        taken.append(real())
        return taken[-1]

    store.try_acquire_retry = spy  # type: ignore[method-assign]
    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, health=store, clock=clock)
    async with Ticker(clock):
        assert (await agent.run("hi")).handled_by == "fast"
    assert taken == [True]


async def test_a_primary_failing_during_the_race_leaves_the_hedge_running(
    clock: FakeClock,
) -> None:
    failing = Paced("failing", clock, [(0.5, ServerError("down", status=503))])
    fast = Paced("fast", clock, [(0.3, "ok")])
    third = Scripted("third", ["never"])
    agent = FallbackAgent([failing, fast, third], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "fast" and third.calls == 0
    assert [a.reason for a in result.attempts] == ["error", None]


async def test_when_both_lanes_fail_the_chain_goes_on_after_them(clock: FakeClock) -> None:
    a = Paced("a", clock, [(0.5, ServerError("down", status=503))])
    b = Paced("b", clock, [(0.2, ServerError("down", status=503))])
    c = Scripted("c", ["ok"])
    agent = FallbackAgent([a, b, c], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "c" and a.calls == b.calls == 1
    assert [x.agent for x in result.attempts] == ["a", "b", "c"]


async def test_a_terminal_error_in_one_lane_stops_the_run_and_cancels_the_other(
    clock: FakeClock,
) -> None:
    from orchestrator.errors import InvalidRequest

    a = Paced("a", clock, [(0.0, HANG)])
    b = Paced("b", clock, [(0.1, InvalidRequest("bad", status=400))])
    agent = FallbackAgent([a, b], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        with pytest.raises(InvalidRequest):
            await agent.run("hi")
    assert a.open == 0 and b.open == 0


async def test_adaptive_hedging_waits_for_samples_then_uses_the_percentile(
    clock: FakeClock,
) -> None:
    hedging = Hedging.of("p95", 1)
    assert hedging is not None and hedging.delay("x") is None
    for _ in range(MIN_SAMPLES - 1):
        hedging.observe("x", 0.02)
    assert hedging.delay("x") is None
    hedging.observe("x", 0.02)
    assert hedging.delay("x") == FLOOR
    for _ in range(MIN_SAMPLES):
        hedging.observe("x", 0.3)
    assert hedging.delay("x") == 0.3

    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after="p95", clock=clock)
    assert agent.hedge is not None
    for _ in range(MIN_SAMPLES):
        agent.hedge.observe("slow", 0.1)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "fast" and 0.15 <= result.latency <= 0.18
    # The lost lane counts with the time it went without content (a lower bound).
    assert agent.hedge.samples["slow"][-1] == pytest.approx(0.15, abs=0.01)
    assert agent.hedge.samples["fast"][-1] == pytest.approx(0.05, abs=0.01)


def test_an_adaptive_delay_in_a_tail_of_stalls_is_capped_at_a_multiple_of_the_median() -> None:
    hedging = Hedging.of("p95", 1)
    assert hedging is not None
    for i in range(100):
        hedging.observe("x", 2.0 if i % 10 == 0 else 0.1)  # 10% of calls stall for 2 s
    assert hedging.delay("x") == pytest.approx(TAIL_CAP * 0.1)


async def test_a_hundred_hedged_calls_in_flight_leave_no_task(clock: FakeClock) -> None:
    slow, fast = slow_and_fast(clock)
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    before = asyncio.all_tasks()
    async with Ticker(clock):
        results = await asyncio.gather(*(agent.run("hi") for _ in range(100)))
    assert {r.handled_by for r in results} == {"fast"}
    assert slow.calls == fast.calls == 100 and slow.open == fast.open == 0
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


async def test_cancelling_a_hedged_call_cancels_every_lane(clock: FakeClock) -> None:
    a = Paced("a", clock, [(0.0, HANG)])
    b = Paced("b", clock, [(0.0, HANG)])
    agent = FallbackAgent([a, b], hedge_after=0.4, clock=clock)
    before = asyncio.all_tasks()
    async with Ticker(clock):
        task = asyncio.create_task(agent.run("hi"))
        while b.calls == 0:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert a.open == b.open == 0 and asyncio.all_tasks() - before == set()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"hedge_after": "p100"}, "hedge_after='p100'"),
        ({"hedge_after": "fast"}, "hedge_after='fast'"),
        ({"hedge_after": -1}, "hedge_after=-1"),
        ({"hedge_after": 0.4, "max_hedges": 0}, "max_hedges=0"),
    ],
)
def test_hedging_settings_are_validated(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        FallbackAgent([Scripted("a", ["ok"])], **kwargs)


def test_hedging_is_auto_by_default_and_off_with_none() -> None:
    hedge = FallbackAgent([Scripted("a", ["ok"]), Scripted("b", ["ok"])]).hedge
    assert hedge is not None and hedge.delay("a") == AUTO_AFTER == 10.0
    timed = FallbackAgent([Scripted("a", ["ok"]), Scripted("b", ["ok"])], attempt_timeout=0.6)
    assert timed.hedge is not None and timed.hedge.delay("a") == pytest.approx(0.2)
    off = FallbackAgent([Scripted("a", ["ok"]), Scripted("b", ["ok"])], hedge_after=None)
    assert off.hedge is None


async def test_all_lanes_failing_raise_fallback_error_with_every_attempt(
    clock: FakeClock,
) -> None:
    a = Paced("a", clock, [(0.5, ServerError("down", status=503))])
    b = Paced("b", clock, [(0.6, ServerError("down", status=503))])
    agent = FallbackAgent([a, b], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        with pytest.raises(FallbackError) as err:
            await agent.run("hi")
    assert [x.agent for x in err.value.attempts] == ["a", "b"]
