"""The DBOS journal: a failed run resumes in a new holding, one holder per run id, each holding
a DBOS workflow whose names are pinned, retention, a dead worker on another machine taken over
(a run and its rerun that sends nothing: test_postgres.py). The process-level crash,
race and recovery-by-a-second-worker tests run on it too (test_crash_process.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid

import pytest

from orchestrator import Request
from orchestrator.errors import QuotaExhausted
from orchestrator.journal import DBOSJournal, JournalError, RunInProgress
from orchestrator.journal import dbos as dbos_journal
from orchestrator.workflow import Parallel, Phase, Step, Workflow, WorkflowError
from providers import FunctionProvider
from tests.orchestrator.journal.test_journal_runs import counting, review_flow
from tests.orchestrator.journal.test_postgres import six_workers_resume_one_run

pytest.importorskip("dbos", reason="dbos not installed: pip install 'failover-orchestrator[dbos]'")


@pytest.fixture(scope="module")
def dbos_url(postgres_url: str) -> str:
    return "dbos+" + postgres_url


async def test_a_failed_run_resumes_in_a_new_holding_with_its_done_steps(dbos_url: str) -> None:
    calls: list[str] = []
    run_id = f"dbos-{uuid.uuid4().hex[:8]}"
    with pytest.raises(WorkflowError):
        await review_flow(counting("p", calls), _broken()).run(
            {"diff": "d"}, run_id=run_id, journal=dbos_url
        )
    calls.clear()
    out = await review_flow(counting("p", calls)).run(
        {"diff": "d"}, run_id=run_id, journal=dbos_url
    )
    assert calls == ["C p<A d> p<B d>"]  # only the failed step was sent again
    assert out["c"].text == "p<C p<A d> p<B d>>"
    # Each holding is a DBOS workflow named RUN_ID~N (pinned: runs in flight depend on it).
    store = DBOSJournal(dbos_url.removeprefix("dbos+"))
    holdings = store._holdings(run_id, output=True)
    assert [(h.workflow_id, h.name, h.status, h.output) for h in holdings] == [
        (f"{run_id}~1", "failover.run", "SUCCESS", "failed"),
        (f"{run_id}~2", "failover.run", "SUCCESS", "done"),
    ]
    store.close()


def _broken() -> FunctionProvider:
    async def fail(req: Request) -> str:
        raise QuotaExhausted("no quota", provider="p")  # not retried: no backoff to wait

    return FunctionProvider(fail, name="p")


async def test_workers_sharing_one_database_one_holds_each_run(dbos_url: str) -> None:
    results, calls = await six_workers_resume_one_run(lambda: DBOSJournal(dbos_url))
    assert sum(isinstance(r, RunInProgress) for r in results) == 5, results
    assert len(calls) == 3


def test_the_persisted_names_are_pinned() -> None:
    assert (dbos_journal.RUN_WORKFLOW, dbos_journal.HOLD_STEP) == ("failover.run", "failover.hold")


def test_a_missing_dbos_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dbos_journal, "_RUNTIME", {})
    monkeypatch.setitem(sys.modules, "dbos", None)
    with pytest.raises(JournalError, match=r"pip install 'failover-orchestrator\[dbos\]'"):
        DBOSJournal("postgresql://u:hunter2@127.0.0.1:1/db")


def test_a_step_event_of_another_shape_is_refused() -> None:
    with pytest.raises(JournalError, match="not a step record"):
        dbos_journal._record({"step": "a"})
    with pytest.raises(JournalError, match="not readable JSON"):
        dbos_journal._record(["a", "done", "fp", 1.0, 2.0, "{not json", "", None])


async def test_retention_deletes_runs_ended_before_keep_days(dbos_url: str) -> None:
    old, new = f"dbos-{uuid.uuid4().hex[:8]}", f"dbos-{uuid.uuid4().hex[:8]}"
    await review_flow(counting("p", [])).run({"diff": "1"}, run_id=old, journal=dbos_url)
    later = DBOSJournal(dbos_url, keep_days=1, wall=lambda: time.time() + 2 * 86400)
    await review_flow(counting("p", [])).run({"diff": "1"}, run_id=new, journal=later)
    assert later.show_run(old) is None  # ended two days "ago": deleted when `new` was created
    shown = later.show_run(new)
    assert shown is not None and shown[0].status == "done"
    later.close()


# A worker on "another machine" (its host name patched) holds a run, records step a as
# started, and waits to be killed.
_OTHER_WORKER = """
import socket, sys
socket.gethostname = lambda: "other-machine"
from orchestrator.journal import DBOSJournal
j = DBOSJournal(sys.argv[1])
j.claim(sys.argv[2], "w", "other-machine:1:aa")
j.record_started(sys.argv[2], "a", "fp")
print("held", flush=True)
sys.stdin.read()
"""


def test_a_dead_workers_run_on_another_machine_is_taken_over_after_the_lease(
    dbos_url: str,
) -> None:
    run_id = f"dbos-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen(
        [sys.executable, "-c", _OTHER_WORKER, dbos_url, run_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "held\n"
    finally:
        worker.kill()
        worker.communicate()
    now = [time.time()]
    store = DBOSJournal(dbos_url, lease=30, wall=lambda: now[0])
    with pytest.raises(RunInProgress, match=r"pid \d+ on other-machine"):
        store.claim(run_id, "w", "me:1:bb")  # its last heartbeat is within the lease
    now[0] += 31  # no heartbeat for a lease: the worker is gone
    steps = store.claim(run_id, "w", "me:1:bb")
    assert steps["a"].status == "started"  # the step it had in flight: run again
    store.release(run_id, "me:1:bb", "done")
    assert [h.status for h in store._holdings(run_id)] == ["CANCELLED", "SUCCESS"]
    store.close()


def test_a_bad_url_says_so_without_its_password() -> None:
    # In a process of its own: DBOS launches once per process.
    code = (
        "from orchestrator.journal import DBOSJournal, JournalError\n"
        "try:\n    DBOSJournal('postgresql://u:hunter2@127.0.0.1:1/db')\n"
        "except JournalError as e:\n    print(e, e.__cause__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("journal: dbos: OperationalError: cannot connect"), done
    assert done.stdout.endswith(" None\n")  # no cause chained
    assert "hunter2" not in done.stdout + done.stderr


async def test_a_parallel_group_with_a_limit_resumes_whatever_order_its_steps_ended_in(
    dbos_url: str,
) -> None:
    # Steps end in an order set by their delays, not by their place: DBOS replaying by
    # call order would hand one step another's result; records keyed by name cannot.
    calls: list[str] = []
    delays = {"s0": 3, "s1": 0, "s2": 2, "s3": 1}

    async def answer(req: Request) -> str:
        calls.append(req.prompt)
        if req.prompt == "boom":
            raise QuotaExhausted("no quota", provider="p")
        for _ in range(delays.get(req.prompt, 0)):
            await asyncio.sleep(0)
        return f"<{req.prompt}>"

    p = FunctionProvider(answer, name="p")

    def flow(last: str) -> Workflow:
        steps = [Step(name, p, prompt=name) for name in delays]
        return Workflow(
            Phase("Many", Parallel(*steps, limit=2)),
            Phase("Last", Step("z", p, prompt=last)),
            name="many",
        )

    run_id = f"dbos-{uuid.uuid4().hex[:8]}"
    with pytest.raises(WorkflowError):
        await flow("boom").run({}, run_id=run_id, journal=dbos_url)
    calls.clear()
    out = await flow("zz").run({}, run_id=run_id, journal=dbos_url)  # z failed: sent again
    assert calls == ["zz"]
    assert {name: out[name].text for name in delays} == {n: f"<{n}>" for n in delays}
