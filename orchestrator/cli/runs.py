"""``failover runs list|show RUN_ID``: what the journal holds of durable workflow runs.

``list`` shows the latest runs (state, steps done, cost); ``show`` what each step of
one run did: done, started (in flight when its run died) or failed, who answered,
tokens, cost. Tables like the other commands, or ``--json``. Reads only: it never
claims a run, so it is safe beside a run in progress.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from orchestrator.cli.tables import Tables
from orchestrator.cli.text import UsageError

__all__ = ["RUN_HEADER", "STEP_HEADER", "add_arguments", "runs"]

RUN_HEADER = ("run", "workflow", "state", "steps done", "cost", "updated")
STEP_HEADER = ("step", "state", "answered by", "tries", "tokens in/out", "cost")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``runs``' sub-commands and options."""
    parser.add_argument("action", choices=("list", "show"), help="list runs, or show one")
    parser.add_argument("run_id", nargs="?", help="the run to show")
    parser.add_argument(
        "--journal",
        help="journal path, sqlite:///PATH, postgresql://... or dbos+postgresql://... "
        "(default .failover/journal.db)",
    )
    parser.add_argument("--limit", type=int, default=50, help="list at most this many runs")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _cost(result: dict[str, Any] | None) -> float | None:
    costs = [a["cost"] for a in (result or {}).get("attempts", ()) if a.get("cost") is not None]
    return sum(costs) if costs else None


def _tokens(result: dict[str, Any] | None) -> tuple[int, int] | None:
    usages = [a["usage"] for a in (result or {}).get("attempts", ()) if a.get("usage")]
    if not usages:
        return None
    return sum(u[0] for u in usages), sum(u[1] for u in usages)


def _step_json(step: Any) -> dict[str, Any]:
    result = step.result or {}
    return {
        "step": step.step,
        "state": step.status,
        "answered_by": result.get("handled_by"),
        "tries": len(result.get("attempts", ())),
        "tokens": _tokens(step.result),
        "cost_usd": _cost(step.result),
        "error": step.error,
        "started_at": step.started_at,
        "finished_at": step.finished_at,
        "streamed_chars": len(step.partial),
    }


def _show(journal: Any, run_id: str, args: argparse.Namespace) -> int:
    shown = journal.show_run(run_id)
    if shown is None:
        print(f"failover: runs: no run {run_id!r} in the journal", file=sys.stderr)
        return 1
    run, steps = shown
    rows = [_step_json(s) for s in steps]
    if args.json:
        print(json.dumps({"run": vars_of(run), "steps": rows}, indent=2))
        return 0
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    title = (
        f"run {run.run_id} (workflow {run.workflow}): {run.status}, "
        f"{sum(r['state'] == 'done' for r in rows)}/{len(rows)} steps done"
        + (f", ${sum(costs):.6f}" if costs else "")
    )
    table = [
        (
            r["step"],
            r["state"] if r["state"] != "failed" else f"failed ({r['error']})",
            r["answered_by"] or "",
            str(r["tries"]) if r["tries"] else "",
            "" if r["tokens"] is None else f"{r['tokens'][0]}/{r['tokens'][1]}",
            "" if r["cost_usd"] is None else f"${r['cost_usd']:.6f}",
        )
        for r in rows
    ]
    Tables(args.tables).table(STEP_HEADER, table, title=title)
    return 0


def vars_of(run: Any) -> dict[str, Any]:
    """A run record as JSON-ready data."""
    return {k: getattr(run, k) for k in run.__slots__}


def _list(journal: Any, args: argparse.Namespace) -> int:
    out = []
    for run in journal.list_runs(args.limit):
        shown = journal.show_run(run.run_id)
        steps = [] if shown is None else [_step_json(s) for s in shown[1]]
        costs = [s["cost_usd"] for s in steps if s["cost_usd"] is not None]
        done = sum(s["state"] == "done" for s in steps)
        out.append({**vars_of(run), "steps": len(steps), "done": done, "cost_usd": sum(costs)})
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    rows = [
        (
            r["run_id"],
            r["workflow"],
            r["status"],
            f"{r['done']}/{r['steps']}",
            f"${r['cost_usd']:.6f}",
            _when(r["updated_at"]),
        )
        for r in out
    ]
    Tables(args.tables).table(RUN_HEADER, rows)
    return 0


def runs(args: argparse.Namespace) -> int:
    """The ``runs`` command."""
    from orchestrator.journal import DEFAULT_JOURNAL, JournalError, open_journal

    if args.action == "show" and not args.run_id:
        raise UsageError("runs show: give the RUN_ID to show ('failover runs list' lists them)")
    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: must be >= 1")
    try:
        journal, owned = open_journal(args.journal or DEFAULT_JOURNAL)
    except JournalError as exc:
        raise UsageError(str(exc)) from None
    try:
        return _show(journal, args.run_id, args) if args.action == "show" else _list(journal, args)
    finally:
        if owned:
            journal.close()
