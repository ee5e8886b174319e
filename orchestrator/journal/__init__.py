"""Durable workflows: a journal of each run's steps, so a crash never pays a step twice.

``await workflow.run(inputs, run_id="pr-1234", journal="sqlite:///.failover/journal.db")``
claims the run, records each step as ``started`` before its provider call and as
``done`` with its Result before any step that depends on it, and a rerun of the
same id returns those Results without a request. The embedded default is one
SQLite file (:class:`SQLiteJournal`); ``postgresql://...`` runs on DBOS
(:class:`DBOSJournal`, the ``dbos`` extra), for many workers on many machines. Any
other engine implements :class:`Journal`.
"""

from __future__ import annotations

from orchestrator.journal.backend import Journal
from orchestrator.journal.errors import (
    JournalError,
    RunInProgress,
    StepInterrupted,
    WorkflowChanged,
)
from orchestrator.journal.open import DEFAULT_JOURNAL, check_run_id, open_journal
from orchestrator.journal.records import RunRecord, StepRecord
from orchestrator.journal.sqlite import SQLiteJournal, holder_id

__all__ = [
    "DEFAULT_JOURNAL",
    "Journal",
    "JournalError",
    "RunInProgress",
    "RunRecord",
    "SQLiteJournal",
    "StepInterrupted",
    "StepRecord",
    "WorkflowChanged",
    "check_run_id",
    "holder_id",
    "open_journal",
]
