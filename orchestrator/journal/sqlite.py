"""The embedded journal: one SQLite file through the standard library, no server.

WAL mode (readers never block the writer), a ``busy_timeout`` (several processes
on one machine wait for each other's short transactions instead of failing), one
transaction per record; a run is claimed in an ``IMMEDIATE`` transaction (the
rules: :mod:`orchestrator.journal.sql`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.journal.errors import JournalError
from orchestrator.journal.sql import SCHEMA_VERSION, SQLJournal, schema

__all__ = ["SQLiteJournal"]


class SQLiteJournal(SQLJournal):
    """A journal in one SQLite file: ``SQLiteJournal(".failover/journal.db")``.

    Use it for runs on one machine (a laptop, a CI runner, several processes);
    for many machines use Postgres (``postgresql://...``). ``lease`` is how long a
    holder on another machine is trusted without a heartbeat. Each record is committed
    before the run goes on, so a crash of the process (SIGKILL, a preempted runner)
    loses nothing; ``durable=True`` also survives a power cut or an OS crash, at an
    fsync per record (bench/journal.py). Without it a power cut may lose the last
    records: those steps run again (at least once).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        keep_days: float = 30.0,
        keep_runs: int = 1000,
        lease: float = 30.0,
        busy_timeout: float = 10.0,
        durable: bool = False,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(keep_days=keep_days, keep_runs=keep_runs, lease=lease, wall=wall)
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            with self._transaction():
                for statement in schema("REAL"):
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise JournalError(
                f"journal {self.path.name!r}: {type(exc).__name__}: {str(exc)[:200]}"
            ) from None

    @contextmanager
    def _transaction(self, run_id: str | None = None) -> Iterator[None]:
        """``BEGIN IMMEDIATE``: the write lock first, so claims serialize."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"
