"""The DBOS backend (``journal="postgresql://..."``): imported only when such a URL is used."""

from __future__ import annotations

from orchestrator.journal.errors import JournalError

__all__ = ["DBOSJournal"]


def DBOSJournal(url: str) -> object:
    raise JournalError("journal: postgresql:// needs the DBOS backend, not built yet")
