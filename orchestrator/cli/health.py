"""``failover health CHAIN``: each provider's circuit, as the shared health store holds it,
and each limiter's use and budget's spend (``limits:``, ``budget:``) in the same store.

Only a shared store (``health: {redis_url: ...}``) outlives a process: with
``health: true`` the circuits live in each running process's memory, where no
other command can read them, so the command says so (exit 2). The store's URL
is never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

from orchestrator.cli.preflight import load
from orchestrator.cli.tables import Tables
from orchestrator.cli.text import UsageError
from orchestrator.config import Config

__all__ = ["CAPACITY_HEADER", "HEALTH_HEADER", "add_arguments", "health"]

HEALTH_HEADER = ("agent", "provider", "state", "open for", "failures", "calls", "in a row")
CAPACITY_HEADER = ("agent", "limiter or budget", "requests", "tokens", "in flight", "spent")
_STYLES = {"closed": "green", "half_open": "yellow", "open": "red"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``health``'s options and positionals."""
    parser.add_argument("file", help="chain file (.yaml, .yml or .toml)")
    parser.add_argument("--agent", help="only this agent (default: every agent with a store)")
    parser.add_argument("--json", action="store_true", help="print the states as JSON")


def _shared(config: Config, only: str | None) -> dict[str, Any]:
    """Agent name -> its shared store; ``UsageError`` when there is nothing to read."""
    if only is not None and only not in config.agents:
        raise UsageError(f"{config.path}: no agent {only!r}; agents: {', '.join(config.agents)}")
    agents = {n: a for n, a in config.agents.items() if only is None or n == only}
    shared = {n: a.health_store for n, a in agents.items() if hasattr(a.health_store, "sync")}
    if not shared:
        raise UsageError(
            f"{config.path}: no agent has a shared health store; circuits of `health: true` "
            "live in each process's memory. Give the agent "
            'health: {redis_url: "${REDIS_URL}"} to share them (and read them here)'
        )
    return shared


async def _states(
    config: Config, shared: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """Each agent's providers' health after one sync, its limiters' use and budgets'
    spend; and whether every store answered."""
    answered = True
    async with AsyncExitStack() as stack:
        for name, store in shared.items():
            stack.push_async_callback(store.aclose)
            children = [c.name for c in config.agents[name].children]
            answered = await store.sync(children) and answered
        out = {
            name: {c.name: store.snapshot(c.name) for c in config.agents[name].children}
            for name, store in shared.items()
        }
        capacity = await _capacity(config, shared) if answered else {}
    return out, capacity, answered


async def _capacity(config: Config, shared: dict[str, Any]) -> dict[str, Any]:
    """Each agent's limiters' use (requests, tokens, in flight) and budgets' spend."""
    from orchestrator.capacity import Charge

    out: dict[str, Any] = {}
    for name, store in shared.items():
        agent = config.agents[name]
        limited = [c.name for c in agent.children if getattr(c, "limits", None) is not None]
        charges = [
            Charge(f"provider:{c.name}", budget, "provider")
            for c in agent.children
            if (budget := getattr(c, "budget", None)) is not None
        ]
        if agent.capacity.budget is not None:
            charges.append(Charge(f"agent:{agent.name}", agent.capacity.budget, "agent"))
        use = await store.capacity.read(limited) if limited else {}
        spent = await store.capacity.spend(charges) if charges else {}
        budgets = {c.key: {"spent_usd": spent[c.key], "usd": c.budget.usd} for c in charges}
        if use or budgets:
            out[name] = {"limits": use, "budgets": budgets}
    return out


def _row(health: Any) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(health).items() if k != "provider"}


def health(args: argparse.Namespace) -> int:
    """The ``health`` command: 0 when read, 1 when a store did not answer (nothing shown:
    this process's empty view would read as "all closed")."""
    config = load(args.file, need_keys=False)  # reads circuits, calls no provider
    states, capacity, answered = asyncio.run(_states(config, _shared(config, args.agent)))
    if not answered:
        print(
            "failover: error: the health store did not answer (is Redis up, and redis_url "
            "right?); no state shown",
            file=sys.stderr,
        )
        return 1
    if args.json:
        data = {a: {p: _row(h) for p, h in ps.items()} for a, ps in states.items()}
        print(json.dumps({"agents": data, "capacity": capacity}, indent=2))
        return 0
    now = time.time()
    rows: list[tuple[str, ...]] = []
    for agent, providers in states.items():
        for provider, h in providers.items():
            left = f"{max(0.0, h.open_until - now):.0f} s" if h.open_until else ""
            counts = (str(h.recent_failures), str(h.recent_calls), str(h.consecutive_failures))
            rows.append((agent, provider, h.state, left, *counts))
    styles = [_STYLES.get(row[2]) for row in rows]
    Tables(args.tables).table(HEALTH_HEADER, rows, styles=styles)
    used = [
        (agent, limiter, f"{u['requests']:.0f}", f"{u['tokens']:.0f}", f"{u['in_flight']:.0f}", "")
        for agent, held in capacity.items()
        for limiter, u in held["limits"].items()
    ] + [
        (agent, budget, "", "", "", f"${b['spent_usd']:.4f} of ${b['usd']:g}")
        for agent, held in capacity.items()
        for budget, b in held["budgets"].items()
    ]
    if used:
        Tables(args.tables).table(CAPACITY_HEADER, used)
    return 0
