"""Why a journal refused a run: another process holds it, a step was interrupted, the
workflow changed since the run started, or the journal itself cannot be used.

Each stops the run: none is retried or handed to another child, and none counts
for a provider's health (the provider did nothing wrong). Messages name the run
and the steps, never a prompt or a reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.errors import FailoverError

__all__ = ["JournalError", "RunInProgress", "StepInterrupted", "WorkflowChanged"]


class JournalError(FailoverError):
    """The journal cannot be used (unreadable, a bad URL): the run stops before sending."""

    retried = False
    hands_over = False
    counts_for_health = False
    overridable = False


class RunInProgress(JournalError):
    """Another live process holds the run id: the run is refused, nothing is sent."""

    def __init__(self, run_id: str, holder: str, age: float) -> None:
        super().__init__(
            f"run {run_id!r} is being run by another process ({holder}, seen {age:.1f} s ago); "
            "wait for it to finish, or rerun the same command once it has ended"
        )
        self.run_id, self.holder, self.age = run_id, holder, age

    def __reduce__(self) -> tuple[object, ...]:
        return (RunInProgress, (self.run_id, self.holder, self.age))


class StepInterrupted(JournalError):
    """A step with ``on_interrupted="fail"`` was in flight when its run died: its side
    effects may have happened, so it is not sent again."""

    def __init__(self, run_id: str, step: str) -> None:
        super().__init__(
            f"run {run_id!r}, step {step!r} was interrupted mid-call (on_interrupted='fail'): "
            "it may have had its effects; check them, then rerun with on_interrupted='rerun' "
            "(--on-interrupted rerun) or under a new run id"
        )
        self.run_id, self.step = run_id, step

    def __reduce__(self) -> tuple[object, ...]:
        return (StepInterrupted, (self.run_id, self.step))


class WorkflowChanged(JournalError):
    """Completed steps whose prompt, inputs or chain changed since the run recorded them."""

    def __init__(self, run_id: str, steps: Sequence[str]) -> None:
        names = ", ".join(repr(s) for s in steps)
        super().__init__(
            f"run {run_id!r}: step(s) {names} changed since the run recorded them (prompt, "
            "inputs or chain); rerun with --restart-changed (restart_changed=True) to run them "
            "again, or use a new run id"
        )
        self.run_id, self.steps = run_id, tuple(steps)

    def __reduce__(self) -> tuple[object, ...]:
        return (WorkflowChanged, (self.run_id, self.steps))
