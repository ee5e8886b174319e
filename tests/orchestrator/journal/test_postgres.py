"""The Postgres journal: the same workflow runs on it, many workers share its runs, one holder
per run id, a worker that died has its run taken over (at once on this machine, after the lease
elsewhere). The process-level crash and race tests run on it too (test_crash_process.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from orchestrator import Request
from orchestrator.journal import JournalError, RunInProgress, open_journal
from orchestrator.journal.postgres import PostgresJournal
from providers import FunctionProvider
from tests.orchestrator.journal.test_journal_runs import counting, review_flow


def _gated(calls: list[str], gate: asyncio.Event) -> FunctionProvider:
    async def answer(req: Request) -> str:
        calls.append(req.prompt)
        await gate.wait()
        return "ok"

    return FunctionProvider(answer, name="p")


async def test_a_workflow_runs_on_postgres_and_a_rerun_sends_nothing(postgres_url: str) -> None:
    calls: list[str] = []
    run_id = f"pg-{uuid.uuid4().hex[:8]}"
    first = await review_flow(counting("p", calls)).run(
        {"diff": "1"}, run_id=run_id, journal=postgres_url
    )
    again = await review_flow(counting("p", calls)).run(
        {"diff": "1"}, run_id=run_id, journal=postgres_url
    )
    assert len(calls) == 3 and again["c"].text == first["c"].text == "p<C p<A 1> p<B 1>>"
    store, _ = open_journal(postgres_url)
    assert isinstance(store, PostgresJournal)
    shown = store.show_run(run_id)
    assert shown is not None and shown[0].status == "done"
    assert [s.status for s in shown[1]] == ["done", "done", "done"]
    assert run_id in [r.run_id for r in store.list_runs()]
    store.close()


async def test_workers_sharing_one_database_one_holds_each_run(postgres_url: str) -> None:
    calls: list[str] = []
    gate = asyncio.Event()
    run_id = f"pg-{uuid.uuid4().hex[:8]}"
    # Six workers, each with its own connection, resume one run id at once.
    runs = [
        asyncio.create_task(
            review_flow(_gated(calls, gate)).run(
                {"diff": "1"}, run_id=run_id, journal=PostgresJournal(postgres_url)
            )
        )
        for _ in range(6)
    ]
    for _ in range(500):  # the holder waits at the gate; the five others are refused
        if sum(t.done() for t in runs) >= 5:
            break
        await asyncio.sleep(0.01)
    gate.set()
    results = await asyncio.gather(*runs, return_exceptions=True)
    assert sum(isinstance(r, RunInProgress) for r in results) == 5, results
    assert len(calls) == 3


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
