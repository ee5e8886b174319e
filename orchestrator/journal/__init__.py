"""Durable workflows: a journal of each run's steps, so a crash never pays a step twice.

``await workflow.run(inputs, run_id="pr-1234", journal="sqlite:///.failover/journal.db")``
claims the run, records each step as ``started`` before its provider call and as
``done`` with its Result before any step that depends on it, and a rerun of the
same id returns those Results without a request. The embedded default is one
SQLite file (:class:`SQLiteJournal`); ``postgresql://...`` is shared by many workers
on many machines (:class:`PostgresJournal`, the ``postgres`` extra), and
``dbos+postgresql://...`` the same on DBOS (:class:`DBOSJournal`, the ``dbos``
extra). Any other engine (Temporal) implements :class:`Journal`.
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
from orchestrator.journal.sql import holder_id
from orchestrator.journal.sqlite import SQLiteJournal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from orchestrator.journal.dbos import DBOSJournal
    from orchestrator.journal.postgres import PostgresJournal

__all__ = [
    "DBOSJournal",
    "DEFAULT_JOURNAL",
    "Journal",
    "JournalError",
    "PostgresJournal",
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


def __getattr__(name: str) -> object:
    # PostgresJournal and DBOSJournal load on first use: psycopg and dbos are optional extras.
    if name == "PostgresJournal":
        from orchestrator.journal.postgres import PostgresJournal

        return PostgresJournal
    if name == "DBOSJournal":
        from orchestrator.journal.dbos import DBOSJournal

        return DBOSJournal
    raise AttributeError(f"module 'orchestrator.journal' has no attribute {name!r}")
