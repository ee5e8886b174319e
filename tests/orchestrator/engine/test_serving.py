"""The seam a run and an explanation share: which children can serve a request, in what order."""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent, FallbackError, Request, Tool
from orchestrator.engine.serving import explain, order
from orchestrator.errors import CircuitOpen, ContextWindowExceeded, ToolsUnsupported
from orchestrator.testing import FakeClock
from tests.conftest import Scripted, health_store
from tests.orchestrator.engine.test_context_window import LONG, windowed

TOOL = Tool("lookup", "find a thing", {"type": "object", "properties": {}})


def _chain(clock: FakeClock) -> tuple[FallbackAgent, list[Scripted]]:
    down = Scripted("down", [RuntimeError("x")])
    small = windowed("small", 500)
    no_tools = windowed("no_tools", None, supports_tools=False)
    big = windowed("big", 200_000)
    store = health_store(clock, threshold=1)
    store.record_failure("down")  # one failure in a row opens it (threshold 1)
    agent = FallbackAgent([down, small, no_tools, big], clock=clock, health=store)
    return agent, [down, small, no_tools, big]


def test_the_order_is_the_chains_own_by_default(clock: FakeClock) -> None:
    agent, _ = _chain(clock)
    assert order(agent, Request("hi")) is agent.members


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (Request("hi"), [CircuitOpen, None, None, None]),
        (Request(LONG), [CircuitOpen, ContextWindowExceeded, None, None]),
        (
            Request(LONG).replace(tools=(TOOL,)),
            [CircuitOpen, ContextWindowExceeded, ToolsUnsupported, None],
        ),
    ],
)
async def test_explain_says_what_a_run_skips_and_a_run_skips_it(
    clock: FakeClock, request_: Request, expected: list[type[BaseException] | None]
) -> None:
    agent, providers = _chain(clock)
    verdicts = explain(agent, request_)
    assert [v.name for v in verdicts] == ["down", "small", "no_tools", "big"]
    assert [type(v.skipped) if v.skipped else None for v in verdicts] == expected
    assert [p.calls for p in providers] == [0, 0, 0, 0]  # nothing sent, no probe taken
    assert agent.health_store is not None
    assert agent.health_store.snapshot("down").state == "open"
    # A run skips exactly the children the explanation said it would, without a request.
    try:
        result = await agent.run(request_)
        attempts = result.attempts
    except FallbackError as e:
        attempts = e.attempts
    skipped = [a.agent for a in attempts if a.attempt_number == 0]
    assert skipped == [v.name for v in verdicts if v.skipped is not None][: len(skipped)]
    first_tried = next(v.name for v in verdicts if v.skipped is None)
    assert next(a.agent for a in attempts if a.attempt_number > 0) == first_tried
