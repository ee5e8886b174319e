"""The journal's rules over a SQL database, shared by the SQLite file and Postgres.

A subclass connects, says how a transaction takes its lock (SQLite: ``BEGIN
IMMEDIATE``, the whole file; Postgres: an advisory lock on the run id) and
executes a statement written with ``?`` placeholders. A run is claimed inside
that transaction, so of several processes claiming one run id exactly one wins:
the others see a live holder (renewed within ``lease``; on this machine, its
process still exists) and are refused with :class:`RunInProgress`. A holder that
died is taken over at once on the same machine, after ``lease`` elsewhere.
Finished runs are pruned when a run is created: older than ``keep_days``, beyond
``keep_runs``.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from orchestrator.journal.errors import JournalError, RunInProgress
from orchestrator.journal.records import MAX_RECORD_CHARS, RunRecord, StepRecord, dumps

__all__ = [
    "SCHEMA_VERSION",
    "SQLJournal",
    "alive_here",
    "describe_holder",
    "holder_id",
    "schema",
    "step_from_row",
]

SCHEMA_VERSION = 1
_STEP_COLUMNS = "step, status, fingerprint, started_at, finished_at, result, partial, error"
_RUN_COLUMNS = "run_id, workflow, status, created_at, updated_at, holder"


def schema(real: str) -> list[str]:
    """The tables, with ``real`` the type of a timestamp (seconds since the epoch)."""
    return [
        "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, "
        f"status TEXT NOT NULL, holder TEXT, heartbeat_at {real}, created_at {real} NOT NULL, "
        f"updated_at {real} NOT NULL)",
        "CREATE INDEX IF NOT EXISTS runs_by_update ON runs(updated_at)",
        "CREATE TABLE IF NOT EXISTS steps (run_id TEXT NOT NULL, step TEXT NOT NULL, "
        f"status TEXT NOT NULL, fingerprint TEXT NOT NULL, started_at {real} NOT NULL, "
        f"finished_at {real}, result TEXT, partial TEXT NOT NULL DEFAULT '', error TEXT, "
        "PRIMARY KEY (run_id, step))",
    ]


def holder_id() -> str:
    """This process, as a claim names it: host, pid and a random tag (pids are reused)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{os.urandom(4).hex()}"


def alive_here(holder: str) -> bool | None:
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


def describe_holder(holder: str) -> str:
    parts = holder.split(":")
    return f"pid {parts[-2]} on {':'.join(parts[:-2])}" if len(parts) >= 3 else "another holder"


class SQLJournal:
    """A :class:`~orchestrator.journal.Journal` over SQL; see the module docstring."""

    def __init__(
        self, *, keep_days: float, keep_runs: int, lease: float, wall: Callable[[], float]
    ) -> None:
        if keep_days <= 0 or keep_runs < 1 or lease <= 0:
            raise ValueError("journal: keep_days and lease must be > 0, keep_runs >= 1")
        self.keep_days, self.keep_runs, self.lease, self._wall = keep_days, keep_runs, lease, wall

    # -- what a dialect provides ----------------------------------------------------------

    def _transaction(self, run_id: str | None = None) -> AbstractContextManager[None]:
        """A transaction holding the lock that serializes claims (of ``run_id``)."""
        raise NotImplementedError

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders); returns a cursor."""
        raise NotImplementedError

    # -- the journal ----------------------------------------------------------------------

    def claim(self, run_id: str, workflow: str, holder: str) -> dict[str, StepRecord]:
        now = self._wall()
        with self._transaction(run_id):
            row = self._execute(
                "SELECT workflow, holder, heartbeat_at FROM runs WHERE run_id=?", (run_id,)
            ).fetchone()
            if row is None:
                self._execute(
                    "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?)",
                    (run_id, workflow, holder, now, now, now),
                )
                self._prune(now)
            else:
                if row[0] != workflow:
                    raise JournalError(
                        f"run {run_id!r} belongs to workflow {row[0]!r}, not {workflow!r}"
                    )
                if row[1] is not None and row[1] != holder and self._held(row[1], row[2], now):
                    raise RunInProgress(run_id, describe_holder(row[1]), max(0.0, now - row[2]))
                self._execute(
                    "UPDATE runs SET holder=?, heartbeat_at=?, status='running', updated_at=? "
                    "WHERE run_id=?",
                    (holder, now, now, run_id),
                )
            steps = self._steps(run_id)
        return {s.step: s for s in steps}

    def _held(self, holder: str, beat: float | None, now: float) -> bool:
        """A live claim: renewed within ``lease``, by a process that (on this machine)
        still exists; a SIGKILLed holder on this machine is free at once."""
        fresh = beat is not None and now - beat < self.lease
        return fresh and alive_here(holder) is not False

    def _prune(self, now: float) -> None:
        """Retention: finished runs older than ``keep_days``, and the oldest beyond
        ``keep_runs`` (a run in progress is kept)."""
        self._execute(
            "DELETE FROM runs WHERE holder IS NULL AND (updated_at < ? OR run_id NOT IN "
            "(SELECT run_id FROM runs ORDER BY updated_at DESC LIMIT ?))",
            (now - self.keep_days * 86400.0, self.keep_runs),
        )
        self._execute("DELETE FROM steps WHERE run_id NOT IN (SELECT run_id FROM runs)")

    def renew(self, run_id: str, holder: str) -> None:
        self._execute(
            "UPDATE runs SET heartbeat_at=? WHERE run_id=? AND holder=?",
            (self._wall(), run_id, holder),
        )

    def record_started(self, run_id: str, step: str, fingerprint: str) -> None:
        self._execute(
            "INSERT INTO steps (run_id, step, status, fingerprint, started_at) "
            "VALUES (?, ?, 'started', ?, ?) ON CONFLICT (run_id, step) DO UPDATE SET "
            "status='started', started_at=excluded.started_at, finished_at=NULL, result=NULL, "
            "error=NULL, partial=CASE WHEN steps.fingerprint=excluded.fingerprint "
            "THEN steps.partial ELSE '' END, fingerprint=excluded.fingerprint",
            (run_id, step, fingerprint, self._wall()),
        )

    def record_partial(self, run_id: str, step: str, text: str) -> None:
        self._execute(
            "UPDATE steps SET partial=? WHERE run_id=? AND step=? AND status='started'",
            (text[:MAX_RECORD_CHARS], run_id, step),
        )

    def record_done(self, run_id: str, step: str, fingerprint: str, result: dict[str, Any]) -> None:
        self._finish(run_id, step, fingerprint, "done", dumps(result), None)

    def record_failed(self, run_id: str, step: str, fingerprint: str, error: str) -> None:
        self._finish(run_id, step, fingerprint, "failed", None, error[:200])

    def _finish(
        self, run_id: str, step: str, fp: str, status: str, stored: str | None, error: str | None
    ) -> None:
        now = self._wall()
        with self._transaction():
            self._execute(
                "UPDATE steps SET status=?, fingerprint=?, finished_at=?, result=?, error=?, "
                "partial='' WHERE run_id=? AND step=?",
                (status, fp, now, stored, error, run_id, step),
            )
            self._execute("UPDATE runs SET updated_at=? WHERE run_id=?", (now, run_id))

    def release(self, run_id: str, holder: str, status: str) -> None:
        self._execute(
            "UPDATE runs SET holder=NULL, status=?, updated_at=? WHERE run_id=? AND holder=?",
            (status, self._wall(), run_id, holder),
        )

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self._execute(
            f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY updated_at DESC LIMIT ?",
            (max(1, min(limit, 10_000)),),
        ).fetchall()
        return [RunRecord(*r) for r in rows]

    def show_run(self, run_id: str) -> tuple[RunRecord, list[StepRecord]] | None:
        run = self._execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id=?", (run_id,))
        row = run.fetchone()
        return None if row is None else (RunRecord(*row), self._steps(run_id))

    def _steps(self, run_id: str) -> list[StepRecord]:
        rows = self._execute(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id=? ORDER BY started_at, step",
            (run_id,),
        ).fetchall()
        return [step_from_row(r) for r in rows]


def step_from_row(row: Sequence[Any]) -> StepRecord:
    """A steps row as a record; a stored result that is too large or not JSON is refused."""
    step, status, fp, started, finished, result, partial, error = row
    data = None
    if len(partial or "") > MAX_RECORD_CHARS:
        raise JournalError(f"journal: step {step!r}'s streamed text is over {MAX_RECORD_CHARS}")
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
