"""A workflow run recorded step by step: what ``Workflow.run(run_id=..., journal=...)`` does.

The run is claimed (one holder at a time), then each step, when its turn comes:
already ``done`` with the same fingerprint -> its Result from the journal, no
request; otherwise ``started`` is written, the chain is called, and ``done`` (or
``failed``) is written before any step that depends on it starts. A step found
``started`` was in flight when a run died: it runs again (at least once) unless
it says ``on_interrupted="fail"``. Completed steps whose prompt, inputs or chain
changed are refused up front unless ``restart_changed``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.engine.delivery import continued, takes_prefill
from orchestrator.journal.errors import StepInterrupted, WorkflowChanged
from orchestrator.journal.open import JournalSpec, check_run_id, open_journal
from orchestrator.journal.records import StepRecord, decode_result, encode_result, fingerprint
from orchestrator.journal.sql import holder_id
from orchestrator.types import Request, Result

if TYPE_CHECKING:
    from orchestrator.journal.backend import Journal
    from orchestrator.workflow import Step, Workflow, WorkflowResult

__all__ = ["OnInterrupted", "run_durably"]

OnInterrupted = Literal["rerun", "fail"]
#: A streaming step writes the text it has seen at most this often (seconds).
PARTIAL_EVERY = 0.25


async def run_durably(
    workflow: Workflow,
    ctx: dict[str, Any],
    run_id: str,
    journal: JournalSpec,
    *,
    on_interrupted: OnInterrupted = "rerun",
    restart_changed: bool = False,
) -> WorkflowResult:
    """Run ``workflow`` as run ``run_id`` of ``journal``; see the module docstring."""
    check_run_id(run_id)
    if on_interrupted not in ("rerun", "fail"):
        raise ValueError(f"on_interrupted: {on_interrupted!r} is not one of rerun, fail")
    store, owned = open_journal(journal)
    holder, status = holder_id(), "failed"
    try:
        records = store.claim(run_id, workflow.name, holder)
        try:
            changed = changed_steps(workflow, ctx, records)
            if changed and not restart_changed:
                raise WorkflowChanged(run_id, changed)
            steps = _JournaledSteps(store, run_id, records, on_interrupted, restart_changed)
            beat = asyncio.create_task(_heartbeat(store, run_id, holder))
            try:
                out = await workflow.run_phases(ctx, steps.run)
            finally:
                beat.cancel()
                await asyncio.gather(beat, return_exceptions=True)
            status = "done"
            return out
        finally:
            store.release(run_id, holder, status)
    finally:
        if owned:
            store.close()


async def _heartbeat(store: Journal, run_id: str, holder: str) -> None:
    """Renew the claim a few times per lease while the run works (a long CLI step)."""
    every = float(getattr(store, "lease", 30.0)) / 3
    while True:
        await asyncio.sleep(every)
        store.renew(run_id, holder)


def changed_steps(
    workflow: Workflow, ctx: Mapping[str, Any], records: Mapping[str, StepRecord]
) -> list[str]:
    """Completed steps whose fingerprint no longer matches, found before anything is sent
    (rendering each done step over the journal's earlier results)."""
    seen, changed = dict(ctx), []
    for _, steps in workflow.steps_by_node():
        for step in steps:
            rec = records.get(step.name)
            if rec is None or rec.status != "done" or rec.result is None:
                continue
            try:
                request = step.render(seen)
            except Exception:  # depends on a step that has not run yet: checked at its turn
                continue
            if fingerprint(step.node, request, step.schema) != rec.fingerprint:
                changed.append(step.name)
            else:
                seen[step.name] = decode_result(rec.result, step.schema)
    return changed


class _JournaledSteps:
    """Runs one step through the journal (the ``run_step`` of ``Workflow.run_phases``)."""

    partial_every = PARTIAL_EVERY

    def __init__(
        self,
        store: Journal,
        run_id: str,
        records: Mapping[str, StepRecord],
        on_interrupted: OnInterrupted,
        restart_changed: bool,
    ) -> None:
        self.store, self.run_id, self.records = store, run_id, records
        self.on_interrupted, self.restart_changed = on_interrupted, restart_changed

    async def run(self, step: Step, ctx: Mapping[str, Any]) -> Result[Any]:
        from orchestrator.workflow import call_step

        request = step.render(ctx)
        fp = fingerprint(step.node, request, step.schema)
        rec = self.records.get(step.name)
        if rec is not None and rec.status == "done" and rec.result is not None:
            if rec.fingerprint == fp:
                return decode_result(rec.result, step.schema)  # paid once: not sent again
            if not self.restart_changed:
                raise WorkflowChanged(self.run_id, [step.name])
        elif (
            rec is not None
            and rec.status == "started"
            and (step.on_interrupted or self.on_interrupted) == "fail"
        ):
            raise StepInterrupted(self.run_id, step.name)
        partial = rec.partial if rec is not None and rec.fingerprint == fp else ""
        self.store.record_started(self.run_id, step.name, fp)
        try:
            if step.mid_stream == "continue":
                result = await self._streamed(step, request, partial)
            else:
                result = await call_step(step, request)
        except Exception as exc:  # a cancellation leaves it "started": it may have been paid
            self.store.record_failed(self.run_id, step.name, fp, type(exc).__name__)
            raise
        self.store.record_done(self.run_id, step.name, fp, encode_result(result))
        return result

    async def _streamed(self, step: Step, request: Request, partial: str) -> Result[Any]:
        """Stream the step's chain, journaling the text seen; a re-run step continues
        from the text its last run had seen instead of paying for it again."""
        if partial:
            first = step.node.children[0] if step.node.children else None
            request = continued(request, partial, prefill=takes_prefill(first))
        seen, flushed = [partial], float("-inf")  # the first chunk is written at once
        async with step.node.stream(request, mid_stream="continue") as chunks:
            async for chunk in chunks:
                if isinstance(chunk, str) and chunk:
                    seen.append(chunk)
                    if time.monotonic() - flushed >= self.partial_every:
                        self.store.record_partial(self.run_id, step.name, "".join(seen))
                        flushed = time.monotonic()
            result = chunks.result
        return dataclasses.replace(result, text=partial + result.text) if partial else result
