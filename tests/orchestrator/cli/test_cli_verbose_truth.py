"""``-v`` tells the truth: the step beside the agent, why a stream stopped, what a deadline left."""

from __future__ import annotations

import asyncio
import io
import pickle

import pytest

from orchestrator import FallbackAgent, FallbackError, Parallel, Phase, Step, Workflow
from orchestrator.cli.progress import Progress, describe_event
from orchestrator.errors import ServerError, StreamStalled
from orchestrator.testing import FakeClock
from tests.conftest import Scripted
from tests.orchestrator.engine.paced import HANG, Paced, Ticker


def lines_of(out: io.StringIO) -> list[str]:
    return [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]


async def test_parallel_steps_on_one_agent_are_told_apart_by_their_step() -> None:
    # Many steps in flight on one agent: each line names the step it belongs to.
    names = [f"s{i}" for i in range(20)]
    down = Scripted("down", [ServerError("503", status=503)] * len(names))
    agent = FallbackAgent([down, Scripted("up", ["ok"] * len(names))], name="shared", max_retries=0)
    flow = Workflow(Phase("All", Parallel(*(Step(n, agent, prompt="hi") for n in names))))
    out = io.StringIO()
    with Progress(out).active():
        await flow.run({})
    lines = lines_of(out)
    for n in names:
        assert f"[{n}] shared: fallback down -> up after ServerError (transient)" in lines
        assert sum(line.startswith(f"[{n}] shared: answered by up") for line in lines) == 1
    assert not any(line.startswith("shared:") for line in lines)  # no line without its step


async def test_a_run_outside_a_workflow_has_no_step_label() -> None:
    out = io.StringIO()
    with Progress(out).active():
        await FallbackAgent([Scripted("a", ["ok"])], name="solo").run("hi")
        await asyncio.sleep(0)
    assert all(line.startswith("solo: ") for line in lines_of(out))


async def test_a_failure_after_text_went_out_says_so_and_names_mid_stream(
    clock: FakeClock,
) -> None:
    stall = Paced("stall", clock, [(0.01, "a"), (0.02, HANG)])
    agent = FallbackAgent([stall, Scripted("b", ["ok"])], name="s", idle_timeout=0.3, clock=clock)
    out = io.StringIO()
    with Progress(out).active():
        async with Ticker(clock), agent.stream("hi", mid_stream="raise") as s:
            with pytest.raises(StreamStalled):
                async for _ in s:
                    pass
    (line,) = [line for line in lines_of(out) if "stopped at" in line]
    assert "is terminal" not in line
    assert line.startswith("s: stopped at stall: StreamStalled after text had already gone out")
    assert "mid_stream='raise'" in line and "mid_stream='continue'" in line


def test_a_tool_call_cut_mid_stream_says_it_cannot_be_resumed() -> None:
    event = {"event": "terminal_error", "child": "c", "reason": "mid_stream", "tool_call": True}
    shown = describe_event({**event, "error_type": "StreamStalled", "mid_stream": "continue"})
    assert shown is not None and "tool call cannot be resumed" in shown[1]


async def test_a_run_deadline_names_the_providers_it_never_tried(clock: FakeClock) -> None:
    slow = Scripted("slow", [("sleep", 100.0, "late")], clock=clock)
    # hedge_after=None: the default hedge would start b after a third of the timeout and
    # rescue the run; this is the message for a run whose deadline left providers untried.
    agent = FallbackAgent(
        [slow, Scripted("b", ["x"]), Scripted("c", ["x"])],
        name="d",
        timeout=10.0,
        clock=clock,
        hedge_after=None,
    )
    out = io.StringIO()
    with Progress(out).active(), pytest.raises(FallbackError) as err:
        await agent.run("hi")
    (line,) = [line for line in lines_of(out) if "attempt(s)" in line]
    assert "every provider failed" not in line
    assert line.startswith("d: 1 attempt(s) failed; never tried: b, c ")
    assert "attempt_timeout=" in line
    assert err.value.untried == ("b", "c")
    assert "never tried: b, c" in str(err.value) and "attempt_timeout=" in str(err.value)
    again = pickle.loads(pickle.dumps(err.value))
    assert again.untried == ("b", "c") and str(again) == str(err.value)


async def test_a_run_that_tried_everyone_says_every_provider_failed(clock: FakeClock) -> None:
    agent = FallbackAgent([Scripted("a", [ServerError("x")])], name="d", max_retries=0)
    out = io.StringIO()
    with Progress(out).active(), pytest.raises(FallbackError) as err:
        await agent.run("hi")
    assert "d: every provider failed (1 attempt(s))" in lines_of(out)
    assert err.value.untried == () and "never tried" not in str(err.value)
