"""The engine with a health store: circuits skip dead providers, the budget caps retries."""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent, FallbackError, Request
from orchestrator.errors import (
    CircuitOpen,
    GuardrailTriggered,
    InvalidRequest,
    RateLimited,
    ServerError,
)
from orchestrator.health import CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock, capture_events
from tests.conftest import Scripted


def store(clock: FakeClock, **circuit: object) -> MemoryHealthStore:
    circuit.setdefault("failure_threshold", 3)  # the rule these tests drive (off by default)
    return MemoryHealthStore(
        circuit=CircuitBreaker(**circuit),  # type: ignore[arg-type]
        budget=RetryBudget(ratio=1.0, min_per_second=1000),
        clock=clock,
    )


async def test_circuit_opens_after_three_failures_and_skips_without_a_request(
    clock: FakeClock,
) -> None:
    primary = Scripted("primary", [ServerError("down")])
    backup = Scripted("backup", ["ok"])
    agent = FallbackAgent(
        [primary, backup], max_retries=0, health=store(clock, cooldown=30.0), clock=clock
    )
    for _ in range(3):
        await agent.run("x")
    assert primary.calls == 3
    result = await agent.run("x")
    assert primary.calls == 3  # skipped: no upstream request
    skipped = result.attempts[0]
    assert skipped.agent == "primary" and skipped.reason == "circuit_open"
    assert isinstance(skipped.error, CircuitOpen)
    assert result.handled_by == "backup"
    health = agent.health()
    assert health["primary"].state == "open" and health["backup"].state == "closed"


async def test_half_open_probe_after_cooldown_closes_or_reopens(clock: FakeClock) -> None:
    primary = Scripted("primary", [ServerError("down")] * 3 + [ServerError("still")] + ["back"])
    backup = Scripted("backup", ["ok"])
    agent = FallbackAgent(
        [primary, backup], max_retries=0, health=store(clock, cooldown=30.0), clock=clock
    )
    for _ in range(3):
        await agent.run("x")
    clock.advance(31)
    r = await agent.run("x")  # probe fails: re-opens
    assert primary.calls == 4 and r.attempts[0].note == "half-open probe"
    await agent.run("x")
    assert primary.calls == 4  # open again
    clock.advance(31)
    r = await agent.run("x")  # probe succeeds: closes
    assert r.handled_by == "primary" and agent.health()["primary"].state == "closed"


async def test_retry_after_opens_the_circuit_for_at_least_that_long(clock: FakeClock) -> None:
    primary = Scripted("primary", [RateLimited("slow", retry_after=120.0), "ok"])
    agent = FallbackAgent(
        [primary, Scripted("backup", ["ok"])], health=store(clock, cooldown=5.0), clock=clock
    )
    await agent.run("x")
    clock.advance(60)
    await agent.run("x")
    assert primary.calls == 1  # still open at 60 s although cooldown is 5 s
    clock.advance(61)
    r = await agent.run("x")
    assert r.handled_by == "primary"


@pytest.mark.parametrize("error", [GuardrailTriggered("no"), InvalidRequest("bad")])
async def test_terminal_errors_never_count(clock: FakeClock, error: Exception) -> None:
    primary = Scripted("primary", [error])
    agent = FallbackAgent([primary, Scripted("b", ["ok"])], health=store(clock), clock=clock)
    for _ in range(5):
        with pytest.raises(type(error)):
            await agent.run("x")
    assert primary.calls == 5 and agent.health()["primary"].state == "closed"


async def test_every_circuit_open_still_tries_the_one_whose_cooldown_ends_first(
    clock: FakeClock,
) -> None:
    a = Scripted("a", [ServerError("down")])
    b = Scripted("b", [ServerError("down")])
    shared = store(clock, cooldown=30.0)
    agent = FallbackAgent([a, b], max_retries=0, health=shared, clock=clock)
    for _ in range(3):
        with pytest.raises(FallbackError):
            await agent.run("x")
        clock.advance(1)  # b's circuit opens a moment after a's
    assert (a.calls, b.calls) == (3, 3)
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert a.calls == 4 and b.calls == 3
    last = info.value.attempts[-1]
    assert (
        last.agent == "a"
        and last.note == "every circuit open: tried the one whose cooldown ends first"
    )
    assert [x.reason for x in info.value.attempts[:2]] == ["circuit_open", "circuit_open"]


async def test_skipped_child_hands_over_with_reason_circuit_open(clock: FakeClock) -> None:
    primary = Scripted("primary", [ServerError("down")])
    backup = Scripted("backup", ["ok"])
    reasons: list[str] = []
    fired: list[tuple[str, str, type]] = []

    def redact(req: Request, why: str) -> Request:
        reasons.append(why)
        return req.replace(prompt="[redacted]")

    agent = FallbackAgent(
        [primary, backup],
        max_retries=0,
        health=store(clock),
        clock=clock,
        before_fallback=redact,
        on_fallback=lambda f, t, e: fired.append((f, t, type(e))),
    )
    for _ in range(4):
        await agent.run("secret")
    assert reasons[-1] == "circuit_open"
    assert fired[-1] == ("primary", "backup", CircuitOpen)
    assert backup.requests[-1].prompt == "[redacted]"


async def test_empty_retry_budget_falls_over_and_says_why(clock: FakeClock) -> None:
    tight = MemoryHealthStore(
        budget=RetryBudget(ratio=0.0, min_per_second=0.0),
        circuit=CircuitBreaker(failure_threshold=100),
        clock=clock,
    )
    primary = Scripted("primary", [ServerError("down")])
    backup = Scripted("backup", ["ok"])
    agent = FallbackAgent([primary, backup], max_retries=3, health=tight, clock=clock)
    result = await agent.run("x")
    assert primary.calls == 1 and clock.sleeps == []
    assert result.attempts[0].note == "retry budget empty"


async def test_state_changes_are_events(clock: FakeClock) -> None:
    agent = FallbackAgent(
        [Scripted("p", [ServerError("down")]), Scripted("b", ["ok"])],
        max_retries=0,
        health=store(clock),
        clock=clock,
    )
    with capture_events() as events:
        for _ in range(3):
            await agent.run("x")
    opened = [e for e in events if e["event"] == "circuit_opened"]
    assert len(opened) == 1 and opened[0]["provider"] == "p"


def test_health_without_a_store_is_a_clear_error() -> None:
    agent = FallbackAgent([Scripted("p", ["ok"])])
    with pytest.raises(RuntimeError, match="health=True"):
        agent.health()


async def test_a_nested_chain_on_the_same_store_counts_one_request(clock: FakeClock) -> None:
    class Counting(MemoryHealthStore):
        requests = 0

        def record_request(self) -> None:
            Counting.requests += 1
            super().record_request()

    shared = Counting(clock=clock)
    inner = FallbackAgent([Scripted("eu", ["ok"])], name="inner", health=shared, clock=clock)
    outer = FallbackAgent([inner], name="outer", health=shared, clock=clock)
    await outer.run("x")
    assert Counting.requests == 1


@pytest.mark.parametrize(
    ("script", "recent"),
    [
        ([ServerError("blip"), ServerError("blip"), "ok"], (1, 0)),  # retries answered
        ([ServerError("down")] * 3, (1, 1)),  # left with a counted failure
    ],
)
async def test_the_breaker_counts_calls_not_attempts(
    clock: FakeClock, script: list[object], recent: tuple[int, int]
) -> None:
    # One call is the first attempt plus its retries on that child: one outcome for the
    # breaker, however many attempts it took (issue 8 section 1).
    health = store(clock)
    agent = FallbackAgent(
        [Scripted("a", script), Scripted("b", ["backup"])],
        max_retries=2,
        retry_strategy="none",
        health=health,
        clock=clock,
    )
    await agent.run("x")
    snap = health.snapshot("a")
    assert (snap.recent_calls, snap.recent_failures) == recent
    assert snap.consecutive_failures == recent[1]
