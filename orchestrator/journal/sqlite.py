"""The embedded journal: one SQLite file through the standard library, no server.

WAL mode (readers never block the writer), a ``busy_timeout`` (several processes
on one machine wait for each other's short transactions instead of failing), one
transaction per record. A run is claimed in an ``IMMEDIATE`` transaction, so of
two processes claiming one run id exactly one wins: the other sees a live holder
(same machine: its process exists; any machine: its heartbeat is younger than
``lease``) and is refused with :class:`RunInProgress`. A holder that died (SIGKILL,
a preempted runner) is taken over at once on the same machine, after ``lease``
elsewhere. Finished runs are pruned: older than ``keep_days``, beyond ``keep_runs``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.journal.errors import JournalError, RunInProgress
from orchestrator.journal.records import MAX_RECORD_CHARS, RunRecord, StepRecord, dumps

__all__ = ["SQLiteJournal", "holder_id"]

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL, holder TEXT,
    heartbeat_at REAL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_update ON runs(updated_at);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL, step TEXT NOT NULL, status TEXT NOT NULL, fingerprint TEXT NOT NULL,
    started_at REAL NOT NULL, finished_at REAL, result TEXT, partial TEXT NOT NULL DEFAULT '',
    error TEXT, PRIMARY KEY (run_id, step));
"""
_STEP_COLUMNS = "step, status, fingerprint, started_at, finished_at, result, partial, error"
_RUN_COLUMNS = "run_id, workflow, status, created_at, updated_at, holder"


def holder_id() -> str:
    """This process, as a claim names it: host, pid and a random tag (pids are reused)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{os.urandom(4).hex()}"


def _alive_here(holder: str) -> bool | None:
    """Whether a holder on this machine still runs; ``None`` for another machine's."""
    parts = holder.split(":")
    if len(parts) < 3 or ":".join(parts[:-2]) != socket.gethostname()[:64]:
        return None
    try:
        os.kill(int(parts[-2]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True


def _describe(holder: str) -> str:
    parts = holder.split(":")
    return f"pid {parts[-2]} on {':'.join(parts[:-2])}" if len(parts) >= 3 else "another holder"


class SQLiteJournal:
    """A journal in one SQLite file: ``SQLiteJournal(".failover/journal.db")``.

    Use it for runs on one machine (a laptop, a CI runner, several processes);
    for many machines use the DBOS backend on Postgres. ``lease`` is how long a
    holder on another machine is trusted without a heartbeat. Each record is committed
    before the run goes on, so a crash of the process (SIGKILL, a preempted runner)
    loses nothing; ``durable=True`` also survives a power cut or an OS crash, at an
    fsync per record (2-10 ms a step against ~0.3 ms: bench/journal.py). Without it a
    power cut may lose the last records: those steps run again (at least once).
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
        if keep_days <= 0 or keep_runs < 1 or lease <= 0:
            raise ValueError("SQLiteJournal: keep_days and lease must be > 0, keep_runs >= 1")
        self.path = Path(path)
        self.keep_days, self.keep_runs, self.lease, self._wall = keep_days, keep_runs, lease, wall
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            with self._transaction() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"journal {self.path.name!r}: {_kind(exc)}") from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: the write lock first, so claims serialize."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def claim(self, run_id: str, workflow: str, holder: str) -> dict[str, StepRecord]:
        now = self._wall()
        with self._transaction() as db:
            row = db.execute(
                "SELECT workflow, holder, heartbeat_at FROM runs WHERE run_id=?", (run_id,)
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?)",
                    (run_id, workflow, holder, now, now, now),
                )
                self._prune(db, now)
            else:
                if row[0] != workflow:
                    raise JournalError(
                        f"run {run_id!r} belongs to workflow {row[0]!r}, not {workflow!r}"
                    )
                if row[1] is not None and row[1] != holder and self._held(row[1], row[2], now):
                    raise RunInProgress(run_id, _describe(row[1]), max(0.0, now - row[2]))
                db.execute(
                    "UPDATE runs SET holder=?, heartbeat_at=?, status='running', updated_at=? "
                    "WHERE run_id=?",
                    (holder, now, now, run_id),
                )
            rows = db.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id=? ORDER BY started_at, rowid",
                (run_id,),
            ).fetchall()
        return {r[0]: _step(r) for r in rows}

    def _held(self, holder: str, beat: float | None, now: float) -> bool:
        """A live claim: renewed within ``lease``, by a process that (on this machine)
        still exists; a SIGKILLed holder on this machine is free at once."""
        fresh = beat is not None and now - beat < self.lease
        return fresh and _alive_here(holder) is not False

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        """Retention: finished runs older than ``keep_days``, and the oldest beyond
        ``keep_runs`` (a run in progress is kept)."""
        db.execute(
            "DELETE FROM runs WHERE holder IS NULL AND (updated_at < ? OR run_id NOT IN "
            "(SELECT run_id FROM runs ORDER BY updated_at DESC LIMIT ?))",
            (now - self.keep_days * 86400.0, self.keep_runs),
        )
        db.execute("DELETE FROM steps WHERE run_id NOT IN (SELECT run_id FROM runs)")

    def renew(self, run_id: str, holder: str) -> None:
        self._db.execute(
            "UPDATE runs SET heartbeat_at=? WHERE run_id=? AND holder=?",
            (self._wall(), run_id, holder),
        )

    def record_started(self, run_id: str, step: str, fingerprint: str) -> None:
        self._db.execute(
            "INSERT INTO steps (run_id, step, status, fingerprint, started_at) "
            "VALUES (?, ?, 'started', ?, ?) ON CONFLICT (run_id, step) DO UPDATE SET "
            "status='started', started_at=excluded.started_at, finished_at=NULL, result=NULL, "
            "error=NULL, partial=CASE WHEN fingerprint=excluded.fingerprint THEN partial "
            "ELSE '' END, fingerprint=excluded.fingerprint",
            (run_id, step, fingerprint, self._wall()),
        )

    def record_partial(self, run_id: str, step: str, text: str) -> None:
        self._db.execute(
            "UPDATE steps SET partial=? WHERE run_id=? AND step=? AND status='started'",
            (text[:MAX_RECORD_CHARS], run_id, step),
        )

    def record_done(
        self,
        run_id: str,
        step: str,
        fingerprint: str,
        result: dict[str, Any] | None,
        error: str | None = None,
    ) -> None:
        now = self._wall()
        with self._transaction() as db:
            db.execute(
                "UPDATE steps SET status=?, fingerprint=?, finished_at=?, result=?, error=?, "
                "partial='' WHERE run_id=? AND step=?",
                (
                    "done" if result is not None else "failed",
                    fingerprint,
                    now,
                    None if result is None else dumps(result),
                    error,
                    run_id,
                    step,
                ),
            )
            db.execute("UPDATE runs SET updated_at=? WHERE run_id=?", (now, run_id))

    def release(self, run_id: str, holder: str, status: str) -> None:
        self._db.execute(
            "UPDATE runs SET holder=NULL, status=?, updated_at=? WHERE run_id=? AND holder=?",
            (status, self._wall(), run_id, holder),
        )

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY updated_at DESC LIMIT ?",
            (max(1, min(limit, 10_000)),),
        ).fetchall()
        return [RunRecord(*r) for r in rows]

    def show_run(self, run_id: str) -> tuple[RunRecord, list[StepRecord]] | None:
        run = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        if run is None:
            return None
        rows = self._db.execute(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id=? ORDER BY started_at, rowid",
            (run_id,),
        ).fetchall()
        return RunRecord(*run), [_step(r) for r in rows]

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"


def _kind(exc: sqlite3.Error) -> str:
    """A SQLite error as a short reason (its message names no data)."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _step(row: tuple[Any, ...]) -> StepRecord:
    """A steps row as a record; a stored result that is too large or not JSON is refused."""
    step, status, fp, started, finished, result, partial, error = row
    data = None
    if result is not None:
        if len(result) > MAX_RECORD_CHARS:
            raise JournalError(f"journal: step {step!r}'s record is over {MAX_RECORD_CHARS} chars")
        try:
            data = json.loads(result)
        except (ValueError, RecursionError):
            raise JournalError(f"journal: step {step!r}'s record is not readable JSON") from None
        if not isinstance(data, dict):
            raise JournalError(f"journal: step {step!r}'s record is not a JSON object")
    return StepRecord(step, status, fp, started, finished, data, partial or "", error)
