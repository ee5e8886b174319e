"""How the engine tries each kind of child: a provider (a Workflow is one) or a nested chain."""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent, RetryPolicy
from orchestrator.errors import (
    AuthenticationFailed,
    FallbackError,
    GuardrailTriggered,
    ProviderTimeout,
    ServerError,
)
from orchestrator.health import Admission, CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock
from orchestrator.workflow import Phase, Step, Workflow
from tests.conftest import Scripted


class Admitting(MemoryHealthStore):
    """A store that lists whom the engine asked to admit."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(
            circuit=CircuitBreaker(failure_threshold=2, cooldown=30.0),
            budget=RetryBudget(ratio=1.0, min_per_second=1000),
            clock=clock,
        )
        self.asked: list[str] = []

    def admit(self, provider: str) -> Admission:
        self.asked.append(provider)
        return super().admit(provider)


async def test_a_workflow_child_is_a_provider_the_store_admits(clock: FakeClock) -> None:
    down = FallbackAgent([Scripted("down", [ServerError("x")])], max_retries=0, clock=clock)
    flow = Workflow(Phase("P", Step("only", down, prompt="{input}")), name="flow")
    shared = Admitting(clock)
    agent = FallbackAgent(
        [flow, Scripted("backup", ["ok"])], max_retries=0, health=shared, clock=clock
    )
    result = await agent.run("q")
    assert result.handled_by == "backup" and shared.asked == ["flow", "backup"]
    assert isinstance(result.attempts[0].error, FallbackError)


async def test_a_subclassed_chain_runs_nested_and_is_never_admitted_as_a_whole(
    clock: FakeClock,
) -> None:
    class Regional(FallbackAgent):
        pass

    shared = Admitting(clock)
    eu = Scripted("eu", [ServerError("x")])
    inner = Regional(
        [eu, Scripted("us", ["ok"])], name="inner", max_retries=0, health=shared, clock=clock
    )
    outer = FallbackAgent([inner], name="outer", health=shared, clock=clock)
    for _ in range(3):
        result = await outer.run("q")
    # The inner children are admitted (eu's circuit opened and it is skipped);
    # the chain itself has no circuit and its attempts join the outer run's.
    assert result.handled_by == "us" and eu.calls == 2
    assert [a.agent for a in result.attempts] == ["eu", "us"]
    assert "inner" not in shared.asked and "outer" not in shared.asked


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
