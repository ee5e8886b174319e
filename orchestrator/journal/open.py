"""``journal=``: a path, a ``sqlite:///`` URL, a ``postgresql://`` or ``dbos+postgresql://``
URL, or a backend object."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from orchestrator.journal.backend import Journal
from orchestrator.journal.errors import JournalError

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = ["DEFAULT_JOURNAL", "JournalSpec", "check_run_id", "open_journal"]

#: Where ``failover run --run-id`` keeps its journal when neither ``--journal`` nor the
#: chain file's ``journal:`` says.
DEFAULT_JOURNAL = ".failover/journal.db"
JournalSpec: TypeAlias = "str | os.PathLike[str] | Journal"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
_POSTGRES = ("postgresql://", "postgres://", "postgresql+")
_DBOS = ("dbos+postgresql://", "dbos+postgres://")


def check_run_id(run_id: object) -> str:
    """``run_id`` when it is a usable id (1-128 of letters, digits and ``._:@/+=-``)."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        shown = repr(run_id)[:40]
        raise ValueError(
            f"run_id {shown}: expected 1-128 characters of letters, digits and ._:@/+=- "
            "starting with a letter or digit (e.g. 'pr-1234-sha-abc')"
        )
    return run_id


def open_journal(spec: JournalSpec) -> tuple[Journal, bool]:
    """The backend ``spec`` names, and whether the caller opened it (and so closes it).

    A backend object is used as given; ``postgresql://...`` opens Postgres (the
    ``postgres`` extra), ``dbos+postgresql://...`` DBOS on Postgres (the ``dbos``
    extra); ``sqlite:///PATH`` or a plain path the SQLite file.
    """
    if isinstance(spec, Journal):
        return spec, False
    if not isinstance(spec, str | os.PathLike):
        raise TypeError(f"journal: expected a path, a URL or a Journal, got {type(spec).__name__}")
    text = os.fspath(spec)
    if text.startswith(_DBOS):
        from orchestrator.journal.dbos import DBOSJournal

        return DBOSJournal(text), True
    if text.startswith(_POSTGRES):
        from orchestrator.journal.postgres import PostgresJournal

        return PostgresJournal(text), True
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        # The URL may hold a password: name only its scheme.
        scheme = text.partition("://")[0][:20]
        raise JournalError(
            f"journal: {scheme}:// is not a journal; use a path, sqlite:///PATH, postgresql://... "
            "or dbos+postgresql://..."
        )
    from orchestrator.journal.sqlite import SQLiteJournal

    return SQLiteJournal(text), True
