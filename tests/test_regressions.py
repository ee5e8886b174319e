"""Regressions for bugs found in review of the engine (each failed before its fix)."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator

import pytest

from orchestrator import (
    FallbackAgent,
    FallbackError,
    HookError,
    Phase,
    Request,
    Response,
    RetryPolicy,
    Step,
    Stop,
    Workflow,
    WorkflowError,
)
from orchestrator.errors import (
    AuthenticationFailed,
    GuardrailTriggered,
    ProviderTimeout,
    RateLimited,
    Rejected,
    ServerError,
)
from orchestrator.health import CircuitBreaker, MemoryHealthStore
from orchestrator.testing import FakeClock, capture_events
from providers import FunctionProvider

from .conftest import Scripted


async def test_retry_on_predicate_never_retries_cancellation() -> None:
    calls = 0

    async def primary(req: Request) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(10)
        return "late"

    agent = FallbackAgent(
        [FunctionProvider(primary)],
        max_retries=3,
        retry_strategy="none",
        retry_on=lambda e: not isinstance(e, AuthenticationFailed),
    )
    task = asyncio.create_task(agent.run("x"))
    while calls < 2:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 2


def store(clock: FakeClock, threshold: int = 3) -> MemoryHealthStore:
    return MemoryHealthStore(
        circuit=CircuitBreaker(failure_threshold=threshold, cooldown=30), clock=clock
    )


async def test_retries_stop_when_the_circuit_opens_and_a_probe_is_never_retried(
    clock: FakeClock,
) -> None:
    # The breaker counts calls, not attempts: a call's own retries never open its circuit;
    # other calls failing meanwhile do, and then this one stops at its next retry.
    health = store(clock)

    class Primary:
        name, calls = "primary", 0

        async def complete(self, request: Request) -> Response:
            self.calls += 1
            if self.calls == 2:  # meanwhile three other calls to it fail: its circuit opens
                for _ in range(3):
                    health.record_failure("primary")
            raise ServerError("down")

    primary = Primary()
    agent = FallbackAgent(
        [primary, Scripted("backup", ["ok"])],
        max_retries=5,
        retry_strategy="none",
        health=health,
        clock=clock,
    )
    r = await agent.run("x")
    assert primary.calls == 2
    assert r.attempts[1].note == "circuit open: no more retries"
    clock.advance(31)
    r = await agent.run("x")
    assert primary.calls == 3  # the single probe, not retried
    assert r.attempts[0].note == "half-open probe"


async def test_a_probe_answered_but_refused_resolves_the_circuit(clock: FakeClock) -> None:
    primary = Scripted("primary", [ServerError("down")] * 3 + ["refused text", "good"])
    health = store(clock)
    agent = FallbackAgent(
        [primary, Scripted("backup", ["ok"])],
        max_retries=0,
        health=health,
        clock=clock,
        accept=lambda r: r.text != "refused text",
    )
    for _ in range(3):
        await agent.run("x")
    clock.advance(31)
    r = await agent.run("x")
    assert r.attempts[0].reason == "rejected" and r.attempts[0].note == "half-open probe"
    assert health.snapshot("primary").state == "closed"
    assert (await agent.run("x")).handled_by == "primary"


async def test_a_probe_refused_by_a_guardrail_resolves_the_circuit(clock: FakeClock) -> None:
    primary = Scripted("primary", [ServerError("down")] * 3 + [GuardrailTriggered("no")])
    health = store(clock)
    agent = FallbackAgent(
        [primary, Scripted("b", ["ok"])], max_retries=0, health=health, clock=clock
    )
    for _ in range(3):
        await agent.run("x")
    clock.advance(31)
    with pytest.raises(GuardrailTriggered):
        await agent.run("x")
    assert health.snapshot("primary").state == "closed"


async def test_hooks_that_use_up_the_deadline_do_not_start_or_blame_the_next_child(
    clock: FakeClock,
) -> None:
    backup = Scripted("backup", ["ok"])
    health = store(clock, threshold=1)
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
    health = store(clock, threshold=1)
    slow = Scripted("slow", [("sleep", 100.0, "late")], clock=clock)
    agent = FallbackAgent([slow], timeout=5.0, health=health, clock=clock)
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert info.value.attempts[0].reason == "deadline"
    assert health.snapshot("slow").state == "closed"


async def test_stop_and_best_effort_text_reach_a_stream() -> None:
    agent = FallbackAgent(
        [Scripted("a", [ServerError("x")]), Scripted("b", ["never"])],
        max_retries=0,
        before_fallback=lambda r, why: Stop(text="Sorry, try later"),
    )
    async with agent.stream("x") as s:
        chunks = [c async for c in s]
    assert chunks == ["Sorry, try later"] == [s.result.text]
    agent2 = FallbackAgent(
        [Scripted("a", [ServerError("x")])],
        max_retries=0,
        best_effort=lambda attempts: "cached answer",
    )
    async with agent2.stream("x") as s2:
        chunks = [c async for c in s2]
    assert chunks == ["cached answer"] and s2.result.best_effort


async def test_a_refused_streamed_reply_is_never_continued_from() -> None:
    sent: list[Request] = []

    async def a(req: Request) -> AsyncIterator[str]:
        yield "I cannot "
        yield "help."

    async def b(req: Request) -> AsyncIterator[str]:
        sent.append(req)
        yield "fine"

    agent = FallbackAgent(
        [FunctionProvider(a), FunctionProvider(b)],
        max_retries=0,
        accept=lambda r: "cannot" not in r.text,
    )
    with pytest.raises(Rejected):
        async with agent.stream("q", mid_stream="continue") as s:
            async for _ in s:
                pass
    assert sent == []


async def test_workflow_child_keeps_the_taxonomy(clock: FakeClock) -> None:
    guard = Scripted("guard", [GuardrailTriggered("policy")])
    backup = Scripted("backup", ["ok"])
    wf = Workflow(Phase("p", Step("s", FallbackAgent([guard], max_retries=0))), name="wf")
    with pytest.raises(GuardrailTriggered):
        await FallbackAgent([wf, backup], max_retries=2, clock=clock).run("x")
    assert guard.calls == 1 and backup.calls == 0
    auth = Scripted("auth", [AuthenticationFailed("401")])
    wf2 = Workflow(Phase("p", Step("s", FallbackAgent([auth]))), name="wf2")
    r = await FallbackAgent([wf2, backup], max_retries=2, clock=clock).run("x")
    assert r.handled_by == "backup" and auth.calls == 1 and clock.sleeps == []


async def test_workflow_reply_is_the_last_declared_step() -> None:
    async def slow(req: Request) -> str:
        await asyncio.sleep(0.02)
        return "first"

    from orchestrator import Parallel

    wf = Workflow(
        Phase(
            "p",
            Parallel(
                Step("first", FunctionProvider(slow)),
                Step("last", FunctionProvider(lambda r: "last", name="l")),
            ),
        )
    )
    assert (await wf.complete(Request("x"))).text == "last"
    failing = Workflow(
        Phase(
            "p",
            Step("draft", Scripted("d", ["draft"])),
            Step(
                "final",
                FallbackAgent([Scripted("f", [ServerError("x")])], max_retries=0),
                continue_on_error=True,
                prompt="{draft.text}",
            ),
        )
    )
    with pytest.raises(FallbackError):
        await failing.complete(Request("x"))


def test_bare_step_reference_is_refused() -> None:
    with pytest.raises(ValueError, match=r"use \{draft\.text\}"):
        Workflow(
            Phase(
                "p",
                Step("draft", Scripted("d", ["x"])),
                Step("review", Scripted("r", ["y"]), prompt="Review: {draft}"),
            )
        )


async def test_missing_key_in_an_input_mapping_is_named_as_such() -> None:
    wf = Workflow(Phase("p", Step("s", Scripted("s", ["x"]), prompt="{doc[title]}")))
    with pytest.raises(WorkflowError, match="an input mapping has no key 'title'"):
        await wf.run({"doc": {}})


async def test_sync_callable_returning_a_coroutine_is_awaited() -> None:
    async def model(req: Request) -> str:
        return "answer"

    agent = FallbackAgent([FunctionProvider(lambda r: model(r), name="lam")])
    assert (await agent.run("x")).text == "answer"


async def test_outer_accept_judges_nested_replies(clock: FakeClock) -> None:
    inner = FallbackAgent([Scripted("cheap", ["BAD"])], name="regional", clock=clock)
    outer = FallbackAgent(
        [inner, Scripted("premium", ["GOOD"])], clock=clock, accept=lambda r: r.text != "BAD"
    )
    r = await outer.run("x")
    assert r.text == "GOOD" and r.attempts[0].reason == "rejected"


async def test_outer_attempt_timeout_bounds_nested_attempts_and_policies_refuse_chains(
    clock: FakeClock,
) -> None:
    inner = FallbackAgent(
        [Scripted("hang", [("sleep", 1000.0, "late")], clock=clock)],
        name="inner",
        max_retries=0,
        clock=clock,
    )
    outer = FallbackAgent([inner, Scripted("backup", ["ok"])], attempt_timeout=5, clock=clock)
    r = await outer.run("x")
    assert r.handled_by == "backup" and isinstance(r.attempts[0].error, ProviderTimeout)
    with pytest.raises(ValueError, match="nested FallbackAgent"):
        FallbackAgent([inner, Scripted("b", ["ok"])], policies={"inner": RetryPolicy()})


async def test_exhausted_nested_chain_hands_over_even_with_fallback_on(clock: FakeClock) -> None:
    inner = FallbackAgent(
        [Scripted("down", [ServerError("x")])], name="eu", max_retries=0, clock=clock
    )
    outer = FallbackAgent(
        [inner, Scripted("backup", ["ok"])], fallback_on=(ServerError,), max_retries=0, clock=clock
    )
    assert (await outer.run("x")).handled_by == "backup"


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


async def test_all_open_last_resort_hands_over_from_its_list_neighbour(clock: FakeClock) -> None:
    seen: list[tuple[str, str, str | None]] = []
    agent = FallbackAgent(
        [
            Scripted("a", [RateLimited("x", provider="a", retry_after=100)]),
            Scripted("b", [RateLimited("x", provider="b", retry_after=10)]),
        ],
        max_retries=0,
        health=store(clock, threshold=1),
        clock=clock,
        on_fallback=lambda f, t, e: seen.append((f, t, getattr(e, "provider", None))),
    )
    with pytest.raises(FallbackError):
        await agent.run("x")
    seen.clear()
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert info.value.attempts[-1].agent == "b"
    assert seen == [("a", "b", "a")]  # a's own CircuitOpen, not b's


async def test_run_succeeded_event(clock: FakeClock) -> None:
    with capture_events() as events:
        await FallbackAgent([Scripted("a", ["ok"])], clock=clock).run("x")
    done = [e for e in events if e["event"] == "run_succeeded"]
    assert len(done) == 1 and done[0]["handled_by"] == "a" and done[0]["log_level"] == "info"


def test_errors_pickle_with_their_messages() -> None:
    hook = HookError("on_fallback", ValueError("hook broke"))
    assert str(pickle.loads(pickle.dumps(hook))) == str(hook)
    wf = WorkflowError("Review", "review", ServerError("x", provider="p"))
    back = pickle.loads(pickle.dumps(wf))
    assert (back.phase, back.step, str(back)) == ("Review", "review", str(wf))


def test_policy_errors_name_the_argument_as_passed() -> None:
    with pytest.raises(ValueError, match=r"RetryPolicy\.delay"):
        RetryPolicy(delay=-1)
    with pytest.raises(ValueError, match=r"RetryPolicy\.strategy"):
        RetryPolicy(strategy="fibonacci")


async def test_an_oversized_reply_falls_over_at_once_without_retries(clock: FakeClock) -> None:
    from orchestrator.errors import InvalidOutput, ResponseTooLarge

    big = Scripted("big", [ResponseTooLarge("reply over max_response_bytes", provider="big")])
    ok = Scripted("ok", ["fine"])
    agent = FallbackAgent(
        [big, ok], max_retries=3, retry_strategy="none", schema_retries=2, clock=clock
    )
    result = await agent.run("x")
    assert result.text == "fine" and result.handled_by == "ok"
    assert big.calls == 1, "an oversized reply is not asked for again"
    first = result.attempts[0]
    assert isinstance(first.error, ResponseTooLarge) and isinstance(first.error, InvalidOutput)
    assert first.reason == "invalid_output"
