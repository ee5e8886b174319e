"""The Postgres journal: the same workflow runs on it, many workers share its runs, one holder
per run id, a worker that died has its run taken over (at once on this machine, after the lease
elsewhere). The process-level crash and race tests run on it too (test_crash_process.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest

from orchestrator import Request
from orchestrator.journal import Journal, JournalError, RunInProgress, open_journal
from orchestrator.journal.postgres import PostgresJournal
from providers import FunctionProvider
from tests.orchestrator.journal.test_journal_runs import counting, review_flow


@pytest.mark.parametrize("backend", ["PostgresJournal", "DBOSJournal"])
async def test_a_workflow_runs_on_postgres_and_a_rerun_sends_nothing(
    postgres_url: str, backend: str
) -> None:
    url = postgres_url
    if backend == "DBOSJournal":
        pytest.importorskip("dbos", reason="dbos not installed: pip install '.[dbos]'")
        url = "dbos+" + postgres_url
    calls: list[str] = []
    run_id = f"pg-{uuid.uuid4().hex[:8]}"
    first = await review_flow(counting("p", calls)).run({"diff": "1"}, run_id=run_id, journal=url)
    again = await review_flow(counting("p", calls)).run({"diff": "1"}, run_id=run_id, journal=url)
    assert len(calls) == 3 and again["c"].text == first["c"].text == "p<C p<A 1> p<B 1>>"
    assert again["a"].attempts == first["a"].attempts  # the journal's, not a new call's
    store, _ = open_journal(url)
    assert type(store).__name__ == backend
    shown = store.show_run(run_id)
    assert shown is not None and (shown[0].status, shown[0].workflow) == ("done", "review")
    assert [(s.step, s.status) for s in shown[1]] == [("a", "done"), ("b", "done"), ("c", "done")]
    assert run_id in [r.run_id for r in store.list_runs()]
    store.close()


async def test_workers_sharing_one_database_one_holds_each_run(postgres_url: str) -> None:
    results, calls = await six_workers_resume_one_run(lambda: PostgresJournal(postgres_url))
    assert sum(isinstance(r, RunInProgress) for r in results) == 5, results
    assert len(calls) == 3


async def six_workers_resume_one_run(
    journal: Callable[[], Journal],
) -> tuple[list[object], list[str]]:
    """Six workers, each with its own connection, run one run id at once; the holder waits
    at a gate until the five others have finished (refused). Returns what each run
    returned or raised, and the prompts sent."""
    calls: list[str] = []
    gate = asyncio.Event()

    async def answer(req: Request) -> str:
        calls.append(req.prompt)
        await gate.wait()
        return "ok"

    run_id = f"race-{uuid.uuid4().hex[:8]}"
    p = FunctionProvider(answer, name="p")
    runs = [
        asyncio.create_task(review_flow(p).run({"diff": "1"}, run_id=run_id, journal=journal()))
        for _ in range(6)
    ]
    for _ in range(1000):
        if sum(t.done() for t in runs) >= 5:
            break
        await asyncio.sleep(0.01)
    gate.set()
    return list(await asyncio.gather(*runs, return_exceptions=True)), calls


def test_a_dead_workers_run_is_taken_over(postgres_url: str) -> None:
    now = [1000.0]
    store = PostgresJournal(postgres_url, lease=30, wall=lambda: now[0])
    run_id = f"pg-{uuid.uuid4().hex[:8]}"
    store.claim(run_id, "w", "other-machine:123:aa")
    store.record_started(run_id, "a", "fp")
    with pytest.raises(RunInProgress, match="pid 123 on other-machine"):
        store.claim(run_id, "w", "worker-2:1:bb")
    now[0] += 31  # no heartbeat for a lease: the worker is gone
    steps = store.claim(run_id, "w", "worker-2:1:bb")
    assert steps["a"].status == "started"  # the step it had in flight: run again
    store.close()


def test_a_bad_postgres_url_says_so_without_its_password() -> None:
    with pytest.raises(JournalError) as info:
        PostgresJournal("postgresql://u:hunter2@127.0.0.1:1/db", connect_timeout=2)
    assert "hunter2" not in str(info.value) and info.value.__cause__ is None
