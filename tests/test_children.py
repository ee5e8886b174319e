"""How the engine tries each kind of child: a provider (a Workflow is one) or a nested chain."""

from __future__ import annotations

from orchestrator import FallbackAgent
from orchestrator.errors import FallbackError, ServerError
from orchestrator.health import Admission, CircuitBreaker, MemoryHealthStore, RetryBudget
from orchestrator.testing import FakeClock
from orchestrator.workflow import Phase, Step, Workflow

from .conftest import Scripted


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
