"""The scale-out journal on DBOS over Postgres (``dbos+postgresql://...``, :class:`DBOSJournal`).

Each holding of a run is a DBOS workflow (``failover.run``) whose id is
``RUN_ID~N``, the Nth holding of that run: DBOS's unique workflow ids decide, of
several workers claiming one run at once, the one that holds it (the others'
start is refused: ``RunInProgress``). Its one step (``failover.hold``) runs in
the holding process for as long as the run does, and writes each step record as
a DBOS event keyed by the step's name (written from a step, an event is an upsert
by key, not an operation replayed in call order, so ``Parallel`` groups with a
``limit`` are safe). Each process is its own DBOS executor (host, pid and a
random tag), so a worker starting DBOS never recovers a live one's workflows. A
worker that died leaves its holding ``PENDING``: the next worker to run that id
sees it dead (its process gone on this machine, no heartbeat for ``lease``
seconds elsewhere), cancels it in DBOS and holds the run as ``RUN_ID~N+1``,
with every step the earlier holdings recorded.

DBOS's own recovery (re-executing a workflow's function in a new process) is not
used: a run's steps are the caller's Python objects (chains, prompts, schemas),
not a function DBOS can call again elsewhere. Needs ``dbos`` (``pip install
'failover-orchestrator[dbos]'``), imported only here.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from orchestrator.journal.errors import JournalError, RunInProgress
from orchestrator.journal.records import MAX_RECORD_CHARS, RunRecord, StepRecord, dumps
from orchestrator.journal.sql import alive_here, describe_holder, holder_id, step_from_row

__all__ = ["DBOSJournal", "HOLD_STEP", "RUN_WORKFLOW"]

#: Persisted names (workflow, step, event keys): pinned by a test, so a refactor
#: cannot strand holdings in flight.
RUN_WORKFLOW = "failover.run"
HOLD_STEP = "failover.hold"
_STEP_KEY, _BEAT_KEY, _SEP = "step:", "beat", "~"
_RELEASE = object()
_T = TypeVar("_T")

#: The holdings this process runs: workflow id -> the records its hold step writes.
_HOLDS: dict[str, queue.Queue[tuple[object, Any, Future[None]]]] = {}
_RUNTIME: dict[str, Any] = {}
_RUNTIME_LOCK = threading.Lock()


def _hold(workflow_id: str) -> str:
    """The hold step: write this holding's records as events until it is released."""
    from dbos import DBOS, WorkflowSerializationFormat

    records = _HOLDS.get(workflow_id)
    if records is None:  # DBOS ran it in a process that does not hold it: nothing to do
        return "abandoned"
    while True:
        key, value, done = records.get()
        if key is _RELEASE:
            done.set_result(None)
            return str(value)
        try:
            DBOS.set_event(str(key), value, serialization_type=WorkflowSerializationFormat.PORTABLE)
        except BaseException as exc:  # handed to the caller waiting on this record
            done.set_exception(exc)
        else:
            done.set_result(None)


def _runtime(url: str, schema_name: str) -> Any:
    """DBOS for this process, launched once on ``url`` (one system database per process)."""
    with _RUNTIME_LOCK:
        if _RUNTIME:
            if _RUNTIME["where"] != (url, schema_name):
                raise JournalError("journal: DBOS is already launched here on another database")
            return _RUNTIME["dbos"]
        try:
            from dbos import DBOS, WorkflowSerializationFormat
        except ImportError:
            raise JournalError(
                "journal: dbos+postgresql:// needs dbos: pip install 'failover-orchestrator[dbos]'"
            ) from None
        hold = DBOS.step(name=HOLD_STEP)(_hold)

        def run(run_id: str, workflow: str, holder: str) -> str:
            return str(hold(str(DBOS.workflow_id)))

        # JSON, not pickle, in the database: a holding's inputs and output are read back.
        portable = WorkflowSerializationFormat.PORTABLE
        _RUNTIME["run"] = DBOS.workflow(
            name=RUN_WORKFLOW, max_recovery_attempts=1, serialization_type=portable
        )(run)
        config = {
            "name": "failover",
            "system_database_url": url,
            "dbos_system_schema": schema_name,
            "executor_id": holder_id(),  # never the default "local": see the module docstring
            "application_version": "failover-journal-1",
            "log_level": "ERROR",
        }
        try:
            DBOS(config=config)  # type: ignore[arg-type]
            DBOS.launch()
        except Exception as exc:  # the URL may hold a password: name only the error's type
            DBOS.destroy()
            raise JournalError(
                f"journal: dbos: {type(exc).__name__}: cannot connect or set up the database"
            ) from None
        _RUNTIME.update(dbos=DBOS, where=(url, schema_name))
        return DBOS


class DBOSJournal:
    """A journal on DBOS, over a Postgres database shared by workers on many machines.

    ``DBOSJournal("postgresql://user@host/db")`` (or ``journal="dbos+postgresql://..."``).
    Use it to keep runs where DBOS's tools see them (a Postgres your services already
    run DBOS on); :class:`~orchestrator.journal.postgres.PostgresJournal` does the same
    with one small transaction per record and no engine. DBOS is one per process: every
    ``DBOSJournal`` in a process uses the same database, and a process that launched
    its own DBOS application cannot also host one.
    """

    def __init__(
        self,
        url: str,
        *,
        keep_days: float = 30.0,
        lease: float = 30.0,
        schema_name: str = "dbos",
        wall: Callable[[], float] = time.time,
    ) -> None:
        if lease <= 0 or keep_days <= 0:
            raise ValueError("DBOSJournal: keep_days and lease must be > 0")
        if not schema_name.isidentifier():
            raise ValueError(f"DBOSJournal.schema_name: {schema_name!r} is not an identifier")
        self.keep_days, self.lease, self.schema_name = keep_days, lease, schema_name
        self._wall = wall
        # DBOS's blocking calls refuse to run on an event loop's thread: they run on this one.
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="failover-dbos")
        self._dbos = self._call(_runtime, url.removeprefix("dbos+"), schema_name)
        self._held: dict[str, tuple[str, Any, dict[str, StepRecord]]] = {}

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on the DBOS thread; a DBOS or database error is a JournalError
        naming only its type (a driver's message may name the host and user)."""
        try:
            return self._pool.submit(fn, *args).result()
        except JournalError:
            raise
        except Exception as exc:
            raise JournalError(f"journal: dbos: {type(exc).__name__}") from None

    # -- claiming ------------------------------------------------------------------------

    def claim(self, run_id: str, workflow: str, holder: str) -> dict[str, StepRecord]:
        holdings = self._holdings(run_id)
        owner = _workflow_of(holdings[0]) if holdings else workflow
        if owner != workflow:
            raise JournalError(f"run {run_id!r} belongs to workflow {owner!r}, not {workflow!r}")
        if holdings and holdings[-1].status == "PENDING":
            self._take_over(run_id, holdings[-1])
        elif not holdings:
            self._prune()
        # Every earlier holding has ended (or was cancelled above): its records are final.
        steps = self._steps([h.workflow_id for h in holdings])
        wid = f"{run_id}{_SEP}{len(holdings) + 1}"
        _HOLDS[wid] = queue.Queue()
        try:
            handle = self._call(self._start, wid, run_id, workflow, holder)
        except BaseException:
            del _HOLDS[wid]
            raise
        self._held[run_id] = (wid, handle, {s.step: s for s in steps})
        self.renew(run_id, holder)
        return dict(self._held[run_id][2])

    def _start(self, wid: str, run_id: str, workflow: str, holder: str) -> Any:
        from dbos import SetWorkflowID, error

        try:
            with SetWorkflowID(wid, workflow_id_reuse_policy="reject"):
                return self._dbos.start_workflow(_RUNTIME["run"], run_id, workflow, holder)
        except error.DBOSWorkflowIDInUseError:
            raise RunInProgress(run_id, "another worker", 0.0) from None

    def _take_over(self, run_id: str, last: Any) -> None:
        """``last`` is still PENDING: refused while its executor lives, else cancelled."""
        executor = str(last.executor_id or "")
        beat = self._call(self._dbos.get_event, last.workflow_id, _BEAT_KEY, 0)
        if not isinstance(beat, int | float):  # started, its first heartbeat not yet written
            beat = (last.created_at or 0) / 1000
        now = self._wall()
        fresh = now - beat < self.lease
        if fresh and alive_here(executor) is not False:
            raise RunInProgress(run_id, describe_holder(executor), max(0.0, now - float(beat)))
        # Cancelled, DBOS never runs that holding again; its events stay readable.
        self._call(self._dbos.cancel_workflow, last.workflow_id)

    def _prune(self) -> None:
        """Retention: runs whose holdings all ended over ``keep_days`` ago are deleted from
        DBOS (a few hundred at a time; a run in progress is kept)."""
        cutoff = self._wall() - self.keep_days * 86400.0
        before = datetime.fromtimestamp(cutoff, tz=UTC).isoformat()
        old = self._call(
            lambda: self._dbos.list_workflows(
                name=RUN_WORKFLOW, end_time=before, limit=200, load_input=False, load_output=False
            )
        )
        for run_id in {h.workflow_id.rpartition(_SEP)[0] for h in old}:
            holdings = self._holdings(run_id)
            if all(h.status in _ENDED and (h.updated_at or 0) / 1000 < cutoff for h in holdings):
                self._call(self._dbos.delete_workflows, [h.workflow_id for h in holdings])

    def _holdings(self, run_id: str, *, output: bool = False) -> list[Any]:
        found: list[Any] = self._call(
            lambda: self._dbos.list_workflows(
                workflow_id_prefix=f"{run_id}{_SEP}", name=RUN_WORKFLOW, load_output=output
            )
        )
        return sorted(found, key=lambda h: int(h.workflow_id.rpartition(_SEP)[2]))

    def _steps(self, workflow_ids: Sequence[str]) -> list[StepRecord]:
        """Every step recorded by these holdings, a later holding's record winning."""
        merged: dict[str, StepRecord] = {}
        for wid in workflow_ids:
            events = self._call(self._dbos.get_all_events, wid)
            for key, value in events.items():
                if key.startswith(_STEP_KEY):
                    rec = _record(value)
                    merged[rec.step] = rec
        return sorted(merged.values(), key=lambda s: (s.started_at, s.step))

    # -- recording -----------------------------------------------------------------------

    def _write(self, run_id: str, key: object, value: Any) -> None:
        wid, _, _ = self._held[run_id]
        done: Future[None] = Future()
        _HOLDS[wid].put((key, value, done))
        try:
            done.result()  # written durably before the run goes on
        except Exception as exc:
            raise JournalError(
                f"journal: dbos: {type(exc).__name__} writing to run {run_id!r}"
            ) from None

    def _put(self, run_id: str, rec: StepRecord) -> None:
        self._held[run_id][2][rec.step] = rec
        row = [rec.step, rec.status, rec.fingerprint, rec.started_at, rec.finished_at]
        stored = None if rec.result is None else dumps(rec.result)
        self._write(run_id, _STEP_KEY + rec.step, [*row, stored, rec.partial, rec.error])

    def renew(self, run_id: str, holder: str) -> None:
        if run_id in self._held:
            self._write(run_id, _BEAT_KEY, self._wall())

    def record_started(self, run_id: str, step: str, fingerprint: str) -> None:
        old = self._held[run_id][2].get(step)
        partial = old.partial if old is not None and old.fingerprint == fingerprint else ""
        self._put(run_id, StepRecord(step, "started", fingerprint, self._wall(), partial=partial))

    def record_partial(self, run_id: str, step: str, text: str) -> None:
        old = self._held[run_id][2].get(step)
        if old is not None and old.status == "started":
            self._put(run_id, _replace(old, partial=text[:MAX_RECORD_CHARS]))

    def record_done(self, run_id: str, step: str, fingerprint: str, result: dict[str, Any]) -> None:
        self._finish(run_id, step, fingerprint, "done", result, None)

    def record_failed(self, run_id: str, step: str, fingerprint: str, error: str) -> None:
        self._finish(run_id, step, fingerprint, "failed", None, error[:200])

    def _finish(
        self, run_id: str, step: str, fp: str, status: Any, result: Any, error: str | None
    ) -> None:
        old = self._held[run_id][2].get(step)
        started = self._wall() if old is None else old.started_at
        self._put(run_id, StepRecord(step, status, fp, started, self._wall(), result, "", error))

    def release(self, run_id: str, holder: str, status: str) -> None:
        held = self._held.pop(run_id, None)
        if held is None:
            return
        wid, handle, _ = held
        done: Future[None] = Future()
        _HOLDS[wid].put((_RELEASE, status, done))
        done.result()
        self._call(handle.get_result)  # the holding's workflow has ended in DBOS
        del _HOLDS[wid]

    # -- reading -------------------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        limit = max(1, min(limit, 10_000))
        found = self._call(
            lambda: self._dbos.list_workflows(
                name=RUN_WORKFLOW, sort_desc=True, limit=limit * 4, load_output=True
            )
        )
        runs: dict[str, list[Any]] = {}
        for h in found:
            runs.setdefault(h.workflow_id.rpartition(_SEP)[0], []).insert(0, h)
        return [_run(rid, hs) for rid, hs in runs.items()][:limit]

    def show_run(self, run_id: str) -> tuple[RunRecord, list[StepRecord]] | None:
        holdings = self._holdings(run_id, output=True)
        if not holdings:
            return None
        return _run(run_id, holdings), self._steps([h.workflow_id for h in holdings])

    def close(self) -> None:
        for run_id in list(self._held):
            self.release(run_id, "", "failed")
        self._pool.shutdown()

    def __repr__(self) -> str:
        return f"DBOSJournal(schema={self.schema_name!r})"


def _record(value: object) -> StepRecord:
    """A step event as a record, refused unless it has the shape the journal writes."""
    if not isinstance(value, list) or len(value) != 8:
        raise JournalError("journal: a DBOS step event is not a step record")
    for i in (5, 6):
        if value[i] is not None and not isinstance(value[i], str):
            raise JournalError("journal: a DBOS step event is not a step record")
    return step_from_row(value)


def _replace(rec: StepRecord, **changes: Any) -> StepRecord:
    import dataclasses

    return dataclasses.replace(rec, **changes)


_ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
_STATUS = {"PENDING": "running", "ENQUEUED": "running", "SUCCESS": None, "CANCELLED": "failed"}


def _workflow_of(holding: Any) -> str:
    """The workflow's name, as the holding's inputs (run id, workflow, holder) have it."""
    args: Sequence[Any] = holding.input["args"] if holding.input is not None else ()
    return str(args[1])[:200] if len(args) == 3 else "?"


def _run(run_id: str, holdings: Sequence[Any]) -> RunRecord:
    """A run as its holdings (oldest first) show it in DBOS."""
    first, last = holdings[0], holdings[-1]
    status = _STATUS.get(last.status, "failed") or str(last.output)
    holder = str(last.executor_id) if status == "running" else None
    workflow = _workflow_of(first)
    return RunRecord(
        run_id,
        workflow,
        status,
        (first.created_at or 0) / 1000,
        (last.updated_at or 0) / 1000,
        holder,
    )
