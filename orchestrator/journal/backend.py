"""The one interface a journal engine implements: the SQLite file, DBOS on Postgres, or
another durable store (a Temporal backend would implement the same five calls).

A run is *claimed* by one holder at a time; the holder records each step as
``started`` before its provider call and ``done`` (with its result) or ``failed`` after, and
renews its claim while it works. The names stored (``started``, ``done``,
``failed``; the columns) are part of the file format: a test pins them, so a
refactor cannot strand runs in flight.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from orchestrator.journal.records import RunRecord, StepRecord

__all__ = ["Journal"]


@runtime_checkable
class Journal(Protocol):
    """Where a workflow run's steps are recorded, durably, before dependants start.

    Calls are synchronous and short (a transaction each); a backend raises
    :class:`~orchestrator.journal.errors.RunInProgress` from :meth:`claim` when
    another live holder has the run.
    """

    def claim(self, run_id: str, workflow: str, holder: str) -> dict[str, StepRecord]:
        """Take the run for ``holder`` (creating it), or raise ``RunInProgress``; returns
        the steps recorded so far by name."""
        ...

    def renew(self, run_id: str, holder: str) -> None:
        """The holder is alive: keep its claim."""
        ...

    def record_started(self, run_id: str, step: str, fingerprint: str) -> None:
        """``step`` is about to call its provider (written before the call)."""
        ...

    def record_partial(self, run_id: str, step: str, text: str) -> None:
        """The text a streaming step has delivered so far."""
        ...

    def record_done(self, run_id: str, step: str, fingerprint: str, result: dict[str, Any]) -> None:
        """``step`` finished: its encoded result (written before dependants start)."""
        ...

    def record_failed(self, run_id: str, step: str, fingerprint: str, error: str) -> None:
        """``step`` failed: the kind of its error (its type's name, never its message)."""
        ...

    def release(self, run_id: str, holder: str, status: str) -> None:
        """The holder is finished with the run (``done`` or ``failed``)."""
        ...

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """The most recently updated runs first."""
        ...

    def show_run(self, run_id: str) -> tuple[RunRecord, list[StepRecord]] | None:
        """A run and its steps in the order they started; ``None`` when unknown."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...
