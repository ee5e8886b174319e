"""Workflows: compose chains into steps, phases and parallel groups.

``Workflow(Phase("Review", Step("review", agent, prompt="Review: {input}")), ...)``.
Phases run in order; inside a phase, nodes run in order; a :class:`Parallel`
runs its steps at the same time (with an optional concurrency ``limit``). A
step's ``prompt`` is a template over the run's inputs and earlier steps'
results (``"Summarise: {review.text}"``) or a callable taking the context.
A ``FallbackAgent`` is sequential and ``Parallel`` simultaneous: they compose
both ways, since a step's node can be any chain and a ``Workflow`` is itself a
provider (``name`` + ``complete``) that can sit inside a ``FallbackAgent``.
"""

from __future__ import annotations

import asyncio
import string
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import events
from orchestrator.engine.agent import FallbackAgent
from orchestrator.errors import FailoverError, FallbackError, ProviderError
from orchestrator.tasks import run_blocking
from orchestrator.types import Provider, Request, Response, Result, Usage

if TYPE_CHECKING:
    from orchestrator.journal.open import JournalSpec

__all__ = [
    "Parallel",
    "Phase",
    "Step",
    "Workflow",
    "WorkflowError",
    "WorkflowResult",
    "call_step",
]

PromptFn = Callable[[Mapping[str, Any]], "str | Request"]
RunStep = Callable[["Step", Mapping[str, Any]], Coroutine[Any, Any, Result]]
_RESULT_FIELDS = {f.name for f in fields(Result)} | {"usage", "cost_usd", "failed_attempts"}


class WorkflowError(FailoverError):
    """A step failed: names the phase and step; ``error`` (also ``__cause__``) is its error.

    ``results`` holds the results of the steps that finished before it.
    """

    def __init__(
        self, phase: str, step: str, error: BaseException, results: WorkflowResult | None = None
    ) -> None:
        super().__init__(f"phase {phase!r}, step {step!r} failed: {error}")
        self.phase, self.step, self.error = phase, step, error
        self.results = results

    def __reduce__(self) -> tuple[Any, ...]:
        # Partial results hold live objects; a pickled error keeps what identifies it.
        return (WorkflowError, (self.phase, self.step, self.error))


async def call_step(step: Step, request: Request) -> Result:
    """One call of ``step``'s chain with its rendered ``request`` (and its schema)."""
    if step.schema is not None:
        return await step.node.run(request, schema=step.schema)
    return await step.node.run(request)


def give_input(name: str) -> str:
    """How to give a workflow the input ``name``: on the command line and in Python."""
    return f"give it: --input {name}=... on the command line, run({{{name!r}: ...}}) in Python"


class Step:
    """One call of a chain; ``prompt`` is a template, a callable of the context, or None.

    ``node`` is a ``FallbackAgent``, or anything with a ``name`` and ``async
    complete(request)`` (a provider, a ``Workflow``), which runs as a chain of one.
    In a journaled run: ``on_interrupted="fail"`` refuses to send the step again when a
    crash caught it mid-call (its effects must not repeat); ``mid_stream="continue"``
    streams it, journaling the text seen, and a re-run continues from that text.
    """

    def __init__(
        self,
        name: str,
        node: FallbackAgent | Provider,
        *,
        prompt: str | PromptFn | None = None,
        continue_on_error: bool = False,
        schema: type[Any] | None = None,
        on_interrupted: Literal["rerun", "fail"] | None = None,
        mid_stream: Literal["continue"] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"Step.name: {name!r} must be an identifier (it is referenced as {{name.text}})"
            )
        if not isinstance(node, FallbackAgent):
            if not (hasattr(node, "complete") and hasattr(node, "name")):
                raise TypeError(
                    f"Step({name!r}).node: {type(node).__name__} is neither a chain "
                    "(FallbackAgent, Workflow) nor a provider"
                )
            # A provider, or a Workflow (whose run() takes inputs, not a request).
            node = FallbackAgent([node])
        if prompt is not None and not (isinstance(prompt, str) or callable(prompt)):
            raise TypeError(f"Step({name!r}).prompt: expected a str template or a callable")
        self.name, self.prompt = name, prompt
        self.node: FallbackAgent = node
        self.continue_on_error, self.schema = continue_on_error, schema
        if on_interrupted not in (None, "rerun", "fail") or mid_stream not in (None, "continue"):
            raise ValueError(f"Step({name!r}): on_interrupted is rerun|fail, mid_stream continue")
        if mid_stream is not None and schema is not None:
            raise ValueError(f"Step({name!r}): mid_stream='continue' streams text; not with schema")
        self.on_interrupted, self.mid_stream = on_interrupted, mid_stream

    def references(self) -> list[tuple[str, str | None]]:
        """(root name, first attribute) of every template field in ``prompt``."""
        if not isinstance(self.prompt, str):
            return []
        out = []
        for _, field, _, _ in string.Formatter().parse(self.prompt):
            if field is None:
                continue
            if not field:
                raise ValueError(f"Step({self.name!r}).prompt: empty {{}} field; name it")
            root, _, rest = field.partition(".")
            root = root.partition("[")[0]
            out.append((root, rest.split(".")[0].split("[")[0] if rest else None))
        return out

    def render(self, context: Mapping[str, Any]) -> Request:
        if self.prompt is None:
            text = context.get("input")
            if not isinstance(text, str):
                raise ValueError(f"Step({self.name!r}): no prompt= and no 'input' in the inputs")
            return Request(text)
        if isinstance(self.prompt, str):
            try:
                return Request(self.prompt.format_map(context))
            except KeyError as e:
                key = e.args[0]
                if key in {root for root, _ in self.references()}:
                    why = f"{{{key}}} has no value: that step failed (continue_on_error=True)"
                else:
                    why = f"an input mapping has no key {key!r}"
                raise ValueError(f"Step({self.name!r}).prompt: {why}") from None
        out = self.prompt(context)
        return out if isinstance(out, Request) else Request(str(out))


class Parallel:
    """Steps that run at the same time; ``limit`` caps how many run at once."""

    def __init__(self, *steps: Step, limit: int | None = None) -> None:
        if not steps or not all(isinstance(s, Step) for s in steps):
            raise TypeError("Parallel: give one or more Step(...) objects")
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError(f"Parallel.limit: {limit!r} must be an int >= 1 or None")
        self.steps, self.limit = steps, limit


class Phase:
    """A named group of steps and parallel groups, run in order."""

    def __init__(self, name: str, *nodes: Step | Parallel) -> None:
        if not nodes or not all(isinstance(n, Step | Parallel) for n in nodes):
            raise TypeError(f"Phase({name!r}): give one or more Step(...) or Parallel(...)")
        self.name, self.nodes = name, nodes


class WorkflowResult(Mapping[str, Result]):
    """Each finished step's Result by name; ``failures`` holds steps that failed but went on."""

    def __init__(self) -> None:
        self.results: dict[str, Result] = {}
        self.failures: dict[str, BaseException] = {}

    def __getitem__(self, key: str) -> Result:
        return self.results[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __repr__(self) -> str:
        return f"WorkflowResult(steps={list(self.results)}, failures={list(self.failures)})"


class Workflow:
    """Phases of steps, run in order; also usable as a provider inside a FallbackAgent."""

    def __init__(
        self, *phases: Phase, name: str | None = None, journal: JournalSpec | None = None
    ) -> None:
        if not phases or not all(isinstance(p, Phase) for p in phases):
            raise TypeError("Workflow: give one or more Phase(...) objects")
        self.phases, self.journal = phases, journal
        self.name = name or "workflow(" + ",".join(p.name for p in phases) + ")"
        self._check_references()

    def _check_references(self) -> None:
        """Step names are unique; ``{step.attr}`` fields name real Result fields."""
        earlier: set[str] = set()
        for phase, steps in self.steps_by_node():
            for step in steps:
                if step.name in earlier:
                    raise ValueError(f"Workflow: step name {step.name!r} is used twice")
                for root, attr in step.references():
                    if root in earlier and attr is None:
                        raise ValueError(
                            f"phase {phase.name!r}, step {step.name!r}: {{{root}}} names a step's "
                            f"whole Result; use {{{root}.text}} (or another Result field)"
                        )
                    if root in earlier and attr is not None and attr not in _RESULT_FIELDS:
                        raise ValueError(
                            f"phase {phase.name!r}, step {step.name!r}: '{root}.{attr}' is not "
                            f"a Result field; use one of {', '.join(sorted(_RESULT_FIELDS))}"
                        )
                earlier.add(step.name)
        self._step_names = earlier

    def check_inputs(self, inputs: Mapping[str, Any]) -> None:
        """``ValueError`` when a prompt names something that is neither one of ``inputs``
        nor an earlier step; ``run`` calls it before anything is sent (so does
        ``failover check``)."""
        seen: set[str] = set(inputs)
        for phase, node_steps in self.steps_by_node():
            for step in node_steps:
                for root, _ in step.references():
                    if root not in seen:
                        allowed = sorted(seen) or ["(none)"]
                        where = (
                            "a step of the same Parallel group or a later step"
                            if root in self._step_names
                            else f"neither an input nor an earlier step ({give_input(root)})"
                        )
                        raise ValueError(
                            f"phase {phase.name!r}, step {step.name!r}: prompt references "
                            f"{{{root}}}, which is {where}; available here: {', '.join(allowed)}"
                        )
            seen.update(s.name for s in node_steps)

    def steps_by_node(self) -> Iterator[tuple[Phase, tuple[Step, ...]]]:
        """Each phase with the steps of each of its nodes, in declaration order."""
        for p in self.phases:
            for node in p.nodes:
                yield p, (node.steps if isinstance(node, Parallel) else (node,))

    async def run(
        self,
        inputs: Mapping[str, Any] | str | None = None,
        *,
        run_id: str | None = None,
        journal: JournalSpec | None = None,
        on_interrupted: Literal["rerun", "fail"] = "rerun",
        restart_changed: bool = False,
    ) -> WorkflowResult:
        """Run every phase in order; returns each step's Result, raises WorkflowError.

        With ``run_id``, the run is durable: each step is journaled in ``journal`` (else
        the workflow's, else ``.failover/journal.db``), and running the same id again
        returns completed steps without a request (see :mod:`orchestrator.journal`).
        """
        ctx: dict[str, Any] = {"input": inputs} if isinstance(inputs, str) else dict(inputs or {})
        self.check_inputs(ctx)  # before anything is called
        if run_id is None:
            if journal is not None:
                raise ValueError("Workflow.run: journal= needs run_id= (the run to record)")
            return await self.run_phases(ctx, self._run_step)
        from orchestrator.journal.open import DEFAULT_JOURNAL
        from orchestrator.journal.runner import run_durably

        where = journal if journal is not None else self.journal or DEFAULT_JOURNAL
        return await run_durably(
            self, ctx, run_id, where, on_interrupted=on_interrupted, restart_changed=restart_changed
        )

    async def run_phases(self, ctx: dict[str, Any], run_step: RunStep) -> WorkflowResult:
        """Every phase in order, each step through ``run_step`` (a journal's, or a call)."""
        out = WorkflowResult()
        for phase in self.phases:
            for node in phase.nodes:
                steps = node.steps if isinstance(node, Parallel) else (node,)
                limit = node.limit if isinstance(node, Parallel) else None
                await self._run_group(phase, steps, limit, ctx, out, run_step)
        return out

    async def _run_group(
        self,
        phase: Phase,
        steps: tuple[Step, ...],
        limit: int | None,
        ctx: dict[str, Any],
        out: WorkflowResult,
        run_step: RunStep,
    ) -> None:
        sem = asyncio.Semaphore(limit or len(steps))
        done: dict[str, Result] = {}
        failed: dict[str, BaseException] = {}

        async def one(step: Step) -> None:
            async with sem:
                try:
                    with events.in_step(step.name):
                        result = await run_step(step, ctx)
                except Exception as e:
                    if step.continue_on_error:
                        failed[step.name] = e
                        return
                    raise WorkflowError(phase.name, step.name, e, out) from e
                done[step.name] = result

        try:
            await self._gather(steps, one)
        finally:
            # Declaration order, whatever order the steps finished in (also in the
            # partial results a WorkflowError carries).
            for step in steps:
                if step.name in done:
                    out.results[step.name] = ctx[step.name] = done[step.name]
                elif step.name in failed:
                    out.failures[step.name] = failed[step.name]

    @staticmethod
    async def _run_step(step: Step, ctx: Mapping[str, Any]) -> Result:
        return await call_step(step, step.render(ctx))

    async def _gather(
        self, steps: tuple[Step, ...], one: Callable[[Step], Coroutine[Any, Any, None]]
    ) -> None:
        """Run ``one(step)`` for every step at once; the first error cancels the rest."""
        if len(steps) == 1:
            await one(steps[0])
            return
        tasks = [asyncio.create_task(one(s), name=f"{self.name}:{s.name}") for s in steps]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for t in tasks:
            error = t.exception() if t.done() and not t.cancelled() else None
            if error is not None:
                raise error

    def run_sync(self, inputs: Mapping[str, Any] | str | None = None) -> WorkflowResult:
        """Blocking ``run`` for scripts; not for use inside a running event loop."""
        return run_blocking(
            lambda: self.run(inputs), "Workflow.run_sync", "await workflow.run(...)"
        )

    async def complete(self, request: Request) -> Response:
        """Run as a provider: ``input`` is the prompt; the last step's text is the reply, its
        usage and cost the sums over every step."""
        try:
            result = await self.run({"input": request.prompt})
        except WorkflowError as e:
            # Keep the taxonomy for the chain around us: a guardrail stays terminal, an
            # exhausted step hands over (a FallbackError is never retried as a whole).
            if isinstance(e.error, ProviderError | FallbackError):
                raise e.error from e
            raise
        last = self._last_step()
        if last in result.failures:
            error = result.failures[last]
            raise (
                error
                if isinstance(error, ProviderError | FallbackError)
                else FallbackError([], name=f"{self.name}:{last}")
            ) from error
        # The reply costs every step's tokens, not only the last step's.
        usages = [r.usage for r in result.values() if r.usage is not None]
        costs = [r.cost_usd for r in result.values() if r.cost_usd is not None]
        return Response(
            result[last].text,
            usage=sum(usages, Usage()) if usages else None,
            model=result[last].handled_by,
            cost_usd=sum(costs) if costs else None,
        )

    def _last_step(self) -> str:
        """The step declared last (its text is the workflow's reply as a provider)."""
        return [s.name for _, steps in self.steps_by_node() for s in steps][-1]

    def __repr__(self) -> str:
        return f"Workflow(name={self.name!r}, phases={[p.name for p in self.phases]!r})"
