"""Journal overhead: wall time a durable run adds per step, and the engine's import cost.

Three ways to run the same N-step workflow (a no-op FunctionProvider per step, so
only the engine's cost is left): no journal; our SQLite journal (one file, WAL,
each step's started and done records committed before the next step; the default
synchronous=NORMAL, and durable=True's FULL, an fsync per record); DBOS on SQLite
(each step a ``@DBOS.step`` in a ``@DBOS.workflow``, its output checkpointed by
DBOS). With ``--postgres``: PostgresJournal, and DBOSJournal (each record a DBOS
event of the run's held workflow) on the same database. Also: the cold import of
each engine in a fresh interpreter, and four processes claiming one run id at once
(exactly one must win).

    python bench/journal.py [--steps 200] [--no-dbos] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator import Request
from orchestrator.journal import Journal, SQLiteJournal
from orchestrator.workflow import Phase, Step, Workflow
from providers import FunctionProvider


async def noop(request: Request) -> str:
    return "ok"


def workflow(steps: int) -> Workflow:
    p = FunctionProvider(noop, name="noop")
    return Workflow(*(Phase(f"p{i}", Step(f"s{i}", p, prompt=f"{i}")) for i in range(steps)))


def per_step_ms(steps: int, journal: Path | Journal | None, rounds: int = 5) -> float:
    """Median over ``rounds`` of the wall time per step of one run (a new run id each)."""
    wf, times = workflow(steps), []
    for r in range(rounds):
        kwargs = {} if journal is None else {"run_id": f"r{r}-{time.time()}", "journal": journal}
        t0 = time.perf_counter()
        asyncio.run(wf.run({}, **kwargs))  # type: ignore[arg-type]
        times.append((time.perf_counter() - t0) / steps * 1000)
    return statistics.median(times)


def import_ms(module: str) -> float:
    """Cold import of ``module`` in a fresh interpreter (median of 3), in ms."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        * 1000
        for _ in range(3)
    ]
    return statistics.median(runs)


DBOS_SCRIPT = """
import sys, time, logging
from dbos import DBOS
DBOS(config={"name": "bench", "system_database_url": "sqlite:///" + sys.argv[1],
              "log_level": "ERROR"})

@DBOS.step()
def step(i: int) -> str:
    return "ok"

@DBOS.workflow()
def run(n: int) -> int:
    for i in range(n):
        step(i)
    return n

DBOS.launch()
run(10)
n = int(sys.argv[2])
times = []
for _ in range(5):
    t = time.perf_counter(); run(n); times.append((time.perf_counter() - t) / n * 1000)
times.sort()
print(times[2])
DBOS.destroy()
"""


def dbos_per_step_ms(steps: int, where: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", DBOS_SCRIPT, str(where / "dbos.sqlite"), str(steps)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


RACE = """
import sys
from orchestrator.journal import RunInProgress, SQLiteJournal, holder_id
j = SQLiteJournal(sys.argv[1])
try:
    j.claim("race", "w", holder_id()); print("won", flush=True); sys.stdin.read()
except RunInProgress:
    print("refused")
"""


def race(where: Path, processes: int = 4) -> list[str]:
    """``processes`` claim one run id at once; each prints won or refused. A winner
    holds its claim (its process lives) until every process has answered."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(where / "race.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    said = [p.stdout.readline().strip() for p in procs if p.stdout is not None]
    for p in procs:
        p.communicate("", timeout=60)
    return sorted(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-dbos", action="store_true")
    parser.add_argument("--postgres", help="also measure PostgresJournal on this database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        try:
            import dbos  # noqa: F401
        except ImportError:
            print("DBOS: not installed (pip install dbos), not measured")
            args.no_dbos = True
        bare = per_step_ms(args.steps, None)
        ours = per_step_ms(args.steps, where / "journal.db")
        full = per_step_ms(args.steps, SQLiteJournal(where / "full.db", durable=True))
        print(f"per step, no journal:        {bare:.3f} ms")
        print(f"per step, SQLite journal:    {ours:.3f} ms (+{ours - bare:.3f} ms)")
        print(f"per step, same, durable=True: {full:.3f} ms (+{full - bare:.3f} ms)")
        print(f"import orchestrator.journal: {import_ms('orchestrator.journal'):.0f} ms")
        if args.postgres:
            from orchestrator.journal.postgres import PostgresJournal

            pg = per_step_ms(args.steps, PostgresJournal(args.postgres))
            print(f"per step, Postgres journal:  {pg:.3f} ms (+{pg - bare:.3f} ms)")
            if not args.no_dbos:
                from orchestrator.journal.dbos import DBOSJournal

                on_dbos = per_step_ms(args.steps, DBOSJournal(args.postgres))
                print(f"per step, DBOS journal (PG): {on_dbos:.3f} ms (+{on_dbos - bare:.3f} ms)")
        if not args.no_dbos:
            print(f"per step, DBOS on SQLite:    {dbos_per_step_ms(args.steps, where):.3f} ms")
            print(f"import dbos:                 {import_ms('dbos'):.0f} ms")
        print(f"4 processes claim one run:   {race(where)}")


if __name__ == "__main__":
    main()
