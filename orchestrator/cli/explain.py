"""``failover explain CHAIN --agent NAME --prompt-file p.txt``: the order a run would try.

Prints, without sending anything, the order the agent's children would be
tried in for that prompt and each one that would be skipped with its reason
(circuit open, context window, tools, and what else
:func:`~orchestrator.engine.serving.why_not` lists), as a table or ``--json``.
It runs the same step as a run (:func:`orchestrator.engine.serving.explain`),
after syncing the chain's shared health stores, so it shows what the next run
would do: the same store state, the same next draw of a seeded strategy. The
prompt is read, never printed; an affinity key is used, never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

from orchestrator.cli.preflight import load, names
from orchestrator.cli.tables import Tables
from orchestrator.cli.text import UsageError, read_file_text, read_stdin
from orchestrator.config import Config
from orchestrator.engine.capacity import look
from orchestrator.engine.classify import reason_of
from orchestrator.engine.serving import Verdict, explain
from orchestrator.routing.router import Keys
from orchestrator.types import Request

__all__ = ["EXPLAIN_HEADER", "add_arguments", "explain_command", "verdicts_json"]

EXPLAIN_HEADER = ("#", "child", "would", "reason")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``explain``'s options and positionals."""
    parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
    parser.add_argument("--agent", help="the agent (optional when the file has one agent)")
    parser.add_argument(
        "--prompt-file",
        required=True,
        help="the prompt, from a file ('-': stdin; at most 8 MiB); never printed",
    )
    parser.add_argument("--affinity", help="the call's affinity key (routes as run would)")
    parser.add_argument("--split-key", help="the call's split key (default: --affinity)")
    parser.add_argument("--json", action="store_true", help="print the order as JSON")


def _prompt(path: str) -> str:
    if path == "-":
        return read_stdin(sys.stdin)
    return read_file_text(path, f"--prompt-file {path!r}")


def _agent(config: Config, wanted: str | None) -> str:
    if wanted is not None:
        if wanted not in config.agents:
            raise UsageError(f"{config.path}: no agent {wanted!r}; agents: {names(config.agents)}")
        return wanted
    if len(config.agents) == 1:
        return next(iter(config.agents))
    raise UsageError(f"{config.path}: choose an agent with --agent: {names(config.agents)}")


def verdicts_json(verdicts: tuple[Verdict, ...]) -> list[dict[str, Any]]:
    """The explanation as JSON: each child's place, whether it would be skipped and why
    (the reason and the error's class; its message names sizes and states, never text)."""
    out = []
    for v in verdicts:
        item: dict[str, Any] = {"position": v.position, "name": v.name, "skipped": False}
        if v.skipped is not None:
            item |= {"skipped": True, "reason": reason_of(v.skipped)}
            item |= {"error": type(v.skipped).__name__, "detail": str(v.skipped)}
        if v.inner:
            item |= {"arm": v.arm, "children": verdicts_json(v.inner)}
        out.append(item)
    return out


def _rows(verdicts: tuple[Verdict, ...], indent: str = "") -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for v in verdicts:
        why = "" if v.skipped is None else f"{reason_of(v.skipped)}: {v.skipped}"
        if v.arm is not None:
            why = f"split arm {v.arm}" + (f"; {why}" if why else "")
        would = "skip" if v.skipped is not None else "try"
        rows.append((indent + str(v.position + 1), indent + v.name, would, why))
        rows += _rows(v.inner, indent + "  ")
    return rows


async def _explained(config: Config, name: str, request: Request, keys: Keys | None) -> Any:
    async with AsyncExitStack() as stack:
        await config.open_health(stack)  # the circuits other processes opened
        await look(config.agents[name], request)  # what every process took of the limits
        return explain(config.agents[name], request, keys)


def explain_command(args: argparse.Namespace) -> int:
    """The ``explain`` command: 0 when shown (nothing is sent)."""
    config = load(args.file, need_keys=False)  # calls no provider
    name = _agent(config, args.agent)
    prompt = _prompt(args.prompt_file)
    try:
        keys = Keys.of(args.affinity, args.split_key)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    verdicts = asyncio.run(_explained(config, name, Request(prompt), keys))
    if args.json:
        print(json.dumps({"agent": name, "order": verdicts_json(verdicts)}, indent=2))
        return 0
    rows = _rows(verdicts)
    styles = ["red" if row[2] == "skip" else "green" for row in rows]
    Tables(args.tables).table(EXPLAIN_HEADER, rows, title=f"{name}: the order", styles=styles)
    return 0
