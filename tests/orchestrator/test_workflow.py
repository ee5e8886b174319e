"""Workflow composition: phases in order, Parallel at once, templates, failures, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError, Request
from orchestrator.errors import ServerError
from orchestrator.workflow import Parallel, Phase, Step, Workflow, WorkflowError
from providers import FunctionProvider
from tests.conftest import InFlight, Scripted, wait_until_cancelled


def echo(name: str, log: list[str] | None = None) -> FallbackAgent:
    async def fn(req: Request) -> str:
        if log is not None:
            log.append(name)
        return f"{name}({req.prompt})"

    return FallbackAgent([FunctionProvider(fn, name=name)])


async def test_phases_run_in_order_and_templates_use_earlier_outputs() -> None:
    log: list[str] = []
    wf = Workflow(
        Phase("Review", Step("review", echo("r", log), prompt="Review: {input}")),
        Phase(
            "Summary",
            Step("summary", echo("s", log), prompt="Sum {review.text} by {review.handled_by}"),
        ),
    )
    out = await wf.run("the diff")
    assert log == ["r", "s"]
    assert out["review"].text == "r(Review: the diff)"
    assert out["summary"].text == "s(Sum r(Review: the diff) by r)"
    assert list(out) == ["review", "summary"]


async def test_parallel_runs_at_once_with_a_limit() -> None:
    inside = InFlight()

    async def slow(req: Request) -> str:
        with inside:
            await asyncio.sleep(0.01)
        return req.prompt

    steps = [
        Step(f"s{i}", FallbackAgent([FunctionProvider(slow, name=f"p{i}")]), prompt=f"{i}")
        for i in range(6)
    ]
    out = await Workflow(Phase("Fan", Parallel(*steps, limit=2))).run({})
    assert inside.most == 2 and sorted(r.text for r in out.values()) == [str(i) for i in range(6)]
    inside.most = 0
    await Workflow(
        Phase(
            "Fan",
            Parallel(
                *[
                    Step(f"t{i}", FallbackAgent([FunctionProvider(slow, name=f"q{i}")]), prompt="x")
                    for i in range(4)
                ]
            ),
        )
    ).run({})
    assert inside.most == 4


async def test_missing_reference_is_an_error_before_anything_is_called() -> None:
    log: list[str] = []
    wf = Workflow(
        Phase("A", Step("first", echo("a", log), prompt="{input}")),
        Phase("B", Step("second", echo("b", log), prompt="{revieww.text}")),
    )
    with pytest.raises(
        ValueError, match=r"'B', step 'second'.*\{revieww\}.*available here: first, input"
    ):
        await wf.run("x")
    assert log == []


async def test_same_parallel_group_reference_is_an_error() -> None:
    wf = Workflow(
        Phase(
            "P", Parallel(Step("a", echo("a"), prompt="x"), Step("b", echo("b"), prompt="{a.text}"))
        )
    )
    with pytest.raises(ValueError, match="same Parallel group"):
        await wf.run({})


def test_bad_result_field_and_duplicate_names() -> None:
    with pytest.raises(ValueError, match=r"'a\.txt' is not a Result field"):
        Workflow(
            Phase("P", Step("a", echo("a"), prompt="x"), Step("b", echo("b"), prompt="{a.txt}"))
        )
    with pytest.raises(ValueError, match="used twice"):
        Workflow(Phase("P", Step("a", echo("a"), prompt="x"), Step("a", echo("b"), prompt="y")))


async def test_a_failing_step_names_phase_and_step_and_carries_the_fallback_error() -> None:
    bad = FallbackAgent([Scripted("down", [ServerError("x")])], max_retries=0)
    later: list[str] = []
    wf = Workflow(
        Phase("Review", Step("ok", echo("o"), prompt="x"), Step("review", bad, prompt="y")),
        Phase("After", Step("after", echo("after", later), prompt="z")),
    )
    with pytest.raises(WorkflowError) as info:
        await wf.run({})
    err = info.value
    assert (err.phase, err.step) == ("Review", "review")
    assert isinstance(err.error, FallbackError) and err.__cause__ is err.error
    assert "phase 'Review', step 'review' failed" in str(err)
    assert err.results is not None and list(err.results) == ["ok"]
    assert later == []


async def test_continue_on_error_records_and_goes_on() -> None:
    bad = FallbackAgent([Scripted("down", [ServerError("x")])], max_retries=0)
    wf = Workflow(
        Phase(
            "P",
            Step("flaky", bad, prompt="x", continue_on_error=True),
            Step("next", echo("n"), prompt="y"),
        ),
    )
    out = await wf.run({})
    assert list(out) == ["next"] and isinstance(out.failures["flaky"], FallbackError)


async def test_parallel_failure_cancels_siblings_and_leaks_nothing() -> None:
    cancelled = asyncio.Event()

    async def hang(req: Request) -> str:
        await wait_until_cancelled(cancelled)
        return "never"

    bad = FallbackAgent([Scripted("down", [ServerError("x")])], max_retries=0)
    wf = Workflow(
        Phase(
            "P",
            Parallel(
                Step("hang", FallbackAgent([FunctionProvider(hang)]), prompt="x"),
                Step("bad", bad, prompt="y"),
            ),
        )
    )
    before = asyncio.all_tasks()
    with pytest.raises(WorkflowError, match="'bad'"):
        await wf.run({})
    assert cancelled.is_set() and asyncio.all_tasks() == before


async def test_cancelling_the_run_stops_all_running_steps() -> None:
    inside = InFlight()

    async def hang(req: Request) -> str:
        with inside:
            await asyncio.Event().wait()
        return "never"

    steps = [
        Step(f"h{i}", FallbackAgent([FunctionProvider(hang, name=f"h{i}")]), prompt="x")
        for i in range(3)
    ]
    before = asyncio.all_tasks()
    task = asyncio.create_task(Workflow(Phase("P", Parallel(*steps))).run({}))
    while inside.entered < 3:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert inside.left == 3
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before


async def test_workflow_is_a_provider_inside_a_fallback_agent_and_agents_are_steps() -> None:
    ensemble = Workflow(
        Phase(
            "Draft",
            Parallel(
                Step("a", echo("a"), prompt="{input}"), Step("b", echo("b"), prompt="{input}")
            ),
        ),
        Phase("Pick", Step("pick", echo("judge"), prompt="{a.text} vs {b.text}")),
        name="ensemble",
    )
    chain = FallbackAgent([Scripted("primary", [ServerError("x")]), ensemble], max_retries=0)
    result = await chain.run("q")
    assert result.handled_by == "ensemble"
    assert result.text == "judge(a(q) vs b(q))"


async def test_callable_prompt_and_provider_node() -> None:
    wf = Workflow(
        Phase("P", Step("one", Scripted("raw", ["ok"]), prompt=lambda ctx: f"n={ctx['n']}"))
    )
    out = await wf.run({"n": 3})
    assert out["one"].text == "ok"


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


async def test_results_keep_declaration_order_whatever_finishes_first() -> None:
    """The CLI printed ``security`` before ``correctness``: completion order leaked out."""

    def step(name: str, delay: float, fail: bool = False) -> Step:
        async def fn(req: Request) -> str:
            await asyncio.sleep(delay)
            if fail:
                raise ServerError("down")
            return name

        agent = FallbackAgent([FunctionProvider(fn, name=name)], max_retries=0)
        return Step(name, agent, prompt="x", continue_on_error=fail)

    wf = Workflow(
        Phase(
            "Review",
            Parallel(
                step("correctness", 0.05),
                step("style", 0.03, fail=True),
                step("flaky", 0.02, fail=True),
                step("security", 0.0),
            ),
            step("summary", 0.0),
        )
    )
    out = await wf.run({})
    assert list(out) == ["correctness", "security", "summary"]
    assert list(out.results) == list(out.keys()) == ["correctness", "security", "summary"]
    assert list(out.failures) == ["style", "flaky"]


async def test_partial_results_of_a_failed_workflow_keep_declaration_order() -> None:
    async def slow(req: Request) -> str:
        await asyncio.sleep(0.03)
        return "a"

    async def fast(req: Request) -> str:
        return "b"

    async def broken(req: Request) -> str:
        await asyncio.sleep(0.06)
        raise ServerError("down")

    def agent(fn: object, name: str) -> FallbackAgent:
        return FallbackAgent([FunctionProvider(fn, name=name)], max_retries=0)  # type: ignore[arg-type]

    wf = Workflow(
        Phase(
            "P",
            Parallel(
                Step("a", agent(slow, "a")),
                Step("b", agent(fast, "b")),
                Step("c", agent(broken, "c")),
            ),
        )
    )
    with pytest.raises(WorkflowError) as info:
        await wf.run("in")
    assert info.value.results is not None and list(info.value.results) == ["a", "b"]


async def test_a_workflow_as_a_step_node_runs_as_a_provider() -> None:
    inner = Workflow(Phase("In", Step("draft", Scripted("d", ["drafted"]), prompt="{input}")))
    outer = Workflow(Phase("Out", Step("nested", inner, prompt="go: {input}")))
    out = await outer.run("x")
    assert out["nested"].text == "drafted" and out["nested"].handled_by == inner.name
