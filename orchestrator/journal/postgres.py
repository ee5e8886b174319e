"""The scale-out journal: Postgres, shared by workers on many machines (``postgresql://...``).

The same rules as the SQLite file (:mod:`orchestrator.journal.sql`), with a claim
serialized by a transaction-level advisory lock on the run id, and a holder on
another machine trusted for ``lease`` seconds after its last heartbeat: a worker
that died (a preempted runner, a SIGKILL) has its run taken over by the next worker
that runs the same id, on this machine at once, elsewhere once the lease has run
out. Needs ``psycopg`` (``pip install 'failover-orchestrator[postgres]'``), imported
only here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from orchestrator.journal.errors import JournalError
from orchestrator.journal.sql import SCHEMA_VERSION, SQLJournal, schema

__all__ = ["PostgresJournal"]

#: The advisory lock taken while the tables are created (two workers starting at once).
_SETUP_LOCK = 0x6661696C


class PostgresJournal(SQLJournal):
    """A journal in a Postgres database, in schema ``failover`` (or ``schema=``).

    ``PostgresJournal("postgresql://user@host/db")``; the password, if any, comes from
    the URL, ``PGPASSWORD`` or ``~/.pgpass`` and is never shown in an error.
    """

    def __init__(
        self,
        url: str,
        *,
        keep_days: float = 30.0,
        keep_runs: int = 1000,
        lease: float = 30.0,
        connect_timeout: float = 10.0,
        schema_name: str = "failover",
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(keep_days=keep_days, keep_runs=keep_runs, lease=lease, wall=wall)
        if not schema_name.isidentifier():
            raise ValueError(f"PostgresJournal.schema_name: {schema_name!r} is not an identifier")
        try:
            import psycopg
        except ImportError:
            raise JournalError(
                "journal: postgresql:// needs psycopg: "
                "pip install 'failover-orchestrator[postgres]'"
            ) from None
        self.schema_name = schema_name
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=int(connect_timeout))
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
                self._db.execute(f"CREATE SCHEMA IF NOT EXISTS {schema_name}")
                self._db.execute(f"SET search_path TO {schema_name}")
                for statement in schema("DOUBLE PRECISION"):
                    self._db.execute(statement)
                self._db.execute(
                    f"COMMENT ON SCHEMA {schema_name} IS 'failover journal v{SCHEMA_VERSION}'"
                )
        except psycopg.Error as exc:
            # libpq's message may name the host and user: the URL's password never.
            raise JournalError(
                f"journal: postgresql: {type(exc).__name__}: cannot connect or set up the "
                f"schema {schema_name!r}"
            ) from None

    @contextmanager
    def _transaction(self, run_id: str | None = None) -> Iterator[None]:
        """A transaction; claiming ``run_id`` takes an advisory lock on it first."""
        with self._db.transaction():
            if run_id is not None:
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (run_id,))
            yield

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(sql.replace("?", "%s"), params)

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresJournal(schema={self.schema_name!r})"
