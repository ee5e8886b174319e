"""Hedges obey the rules a fall-over obeys: no request that cannot fit, deadlines in every lane.

Fake time throughout (``Paced`` providers on a ``FakeClock``).
"""

from __future__ import annotations

from orchestrator import FallbackAgent, Request
from orchestrator.errors import ContextWindowExceeded, FirstTokenTimeout, StreamStalled
from orchestrator.health import MemoryHealthStore
from orchestrator.testing import FakeClock, capture_events
from tests.conftest import Scripted
from tests.orchestrator.engine.paced import HANG, Paced, Ticker

LONG = "x" * 4000  # at least 32 tokens (orchestrator.tokens lower bound)


async def test_no_hedge_to_a_child_whose_context_window_cannot_hold_the_request(
    clock: FakeClock,
) -> None:
    store = MemoryHealthStore(clock=clock)
    taken: list[str] = []
    store.try_acquire_retry = lambda: taken.append("token") is None  # type: ignore[method-assign]
    reasons: list[str] = []

    def before(request: Request, reason: str) -> Request:
        reasons.append(reason)
        return request

    slow = Paced("slow", clock, [(0.6, "slow")])
    small = Paced("small", clock, [(0.01, "small")], context_window=8)
    agent = FallbackAgent(
        [slow, small], hedge_after=0.4, health=store, before_fallback=before, clock=clock
    )
    with capture_events() as events:
        async with Ticker(clock):
            result = await agent.run(LONG)
    assert result.handled_by == "slow" and small.calls == 0
    assert [a.agent for a in result.attempts] == ["slow"]
    assert taken == [] and reasons == []
    (skipped,) = [e for e in events if e["event"] == "hedge_skipped"]
    assert skipped["to"] == "small" and "context window" in skipped["why"]


async def test_when_the_primary_fails_the_unfit_child_is_the_usual_context_window_skip(
    clock: FakeClock,
) -> None:
    failing = Paced("failing", clock, [(0.6, ConnectionResetError("reset"))])
    small = Paced("small", clock, [(0.01, "small")], context_window=8)
    big = Scripted("big", ["ok"])
    agent = FallbackAgent([failing, small, big], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run(LONG)
    assert result.handled_by == "big" and small.calls == 0
    assert [(a.agent, a.reason) for a in result.attempts][1:] == [
        ("small", "context_window"),
        ("big", None),
    ]
    assert isinstance(result.attempts[1].error, ContextWindowExceeded)


async def test_first_token_timeouts_apply_in_every_lane(clock: FakeClock) -> None:
    a = Paced("a", clock, [(0.0, HANG)], first_token_timeout=1.0)
    b = Paced("b", clock, [(0.0, HANG)], first_token_timeout=0.2)
    c = Scripted("c", ["ok"])
    agent = FallbackAgent([a, b, c], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "c" and a.open == b.open == 0
    first, second, _ = result.attempts
    assert {(x.agent, type(x.error)) for x in (first, second)} == {
        ("a", FirstTokenTimeout),
        ("b", FirstTokenTimeout),
    }
    b_attempt = first if first.agent == "b" else second
    assert 0.2 <= b_attempt.duration <= 0.22
    assert 1.0 <= result.latency <= 1.05


async def test_a_hedge_that_won_and_then_stalls_fails_on_its_idle_timeout(
    clock: FakeClock,
) -> None:
    a = Paced("a", clock, [(0.0, HANG)])
    b = Paced("b", clock, [(0.1, "x"), (5.0, "y")], idle_timeout=0.3)
    c = Scripted("c", ["ok"])
    agent = FallbackAgent([a, b, c], hedge_after=0.4, max_retries=0, clock=clock)
    async with Ticker(clock):
        result = await agent.run("hi")
    assert result.handled_by == "c" and a.open == b.open == 0
    assert (result.attempts[0].agent, result.attempts[0].reason) == ("a", "hedge_lost")
    stalled = result.attempts[1]
    assert stalled.agent == "b" and isinstance(stalled.error, StreamStalled)
    assert 0.4 - 0.001 <= stalled.duration <= 0.42


async def test_the_losers_estimated_cost_at_its_price_is_in_the_result(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(2.0, "slow")], price=(2.0, 8.0))
    fast = Paced("fast", clock, [(0.05, "fast")])
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("x" * 400)  # ~100 input tokens (characters / 4)
    lost = result.attempts[0]
    assert lost.reason == "hedge_lost" and lost.usage is not None
    assert lost.usage.input_tokens == 100 and lost.usage.output_tokens == 0
    assert lost.cost_usd == 100 * 2.0 / 1e6 == result.cost_usd
    assert "cost estimated at the provider's rates" in (lost.note or "")


async def test_a_loser_without_rates_has_no_cost_rather_than_a_wrong_one(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(2.0, "slow")])
    fast = Paced("fast", clock, [(0.05, "fast")])
    agent = FallbackAgent([slow, fast], hedge_after=0.4, clock=clock)
    async with Ticker(clock):
        result = await agent.run("x" * 400)
    assert result.attempts[0].cost_usd is None and result.cost_usd is None
