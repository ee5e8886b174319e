"""Health soak: does a health store ever make availability worse? Three scenarios, real HTTP.

One simulated provider server (``providers.simulator``) runs in its own process on
loopback; this process runs the clients. Two providers, both real HTTP clients:
``OpenAIChat`` on the simulator's ``openai`` route (primary) and
``AnthropicMessages`` on its ``anthropic`` route (secondary). Every call is one
``FallbackAgent([primary, secondary]).run`` with ``max_retries=3`` and an
exponential backoff of 5 ms (short so the run stays short; the schedule does
not change what is counted). Each scenario runs twice, without a health store
and with a fresh default ``MemoryHealthStore()``, and prints both.

1. ``flaky``: each route fails independently 30% of the time (``Fault.flaky(0.3)``
   -> 503; ``--flaky-rate`` changes it); ``--calls`` calls (default 20,000) with 100 in
   flight. Prints calls, failed calls (and in how many of them the store cut a
   retry or skipped a provider), upstream requests, and this process's RSS at
   the start and the end. A call fails when all 8 tries fail (0.3**8: about 1.3
   per 20,000), so single runs differ by chance; "health cut a try in 0" says
   none of the failures was the store's doing.
2. ``dead``: the primary answers 503 to everything, the secondary is healthy;
   100 in flight for ``--dead-seconds`` (default 10 s). Prints the requests the
   dead primary received.
3. ``all-down``: both answer 503 to everything; 100 in flight for
   ``--down-seconds`` (default 3.5 s). Prints the requests both received.

Run: ``.venv/bin/python bench/health_soak.py [--calls 20000] [--flaky-rate 0.3] [--only flaky]``
(about a minute on a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from providers_bench import KEY, Sim

from orchestrator import FallbackAgent, FallbackError
from orchestrator.health import MemoryHealthStore
from providers import AnthropicMessages, OpenAIChat
from providers.http.client import close_shared_client

IN_FLIGHT = 100
FAIL = {"status": 503}


def rss_mb() -> float:
    """This process's resident set size now, in MiB (from /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def agent(sim: Sim, health: bool) -> FallbackAgent:
    primary = OpenAIChat("m", base_url=sim.url + "/openai/v1", api_key=KEY, name="primary")
    secondary = AnthropicMessages(
        "m", base_url=sim.url + "/anthropic", api_key=KEY, name="secondary"
    )
    return FallbackAgent(
        [primary, secondary],
        max_retries=3,
        retry_strategy="exponential",
        retry_delay=0.005,
        max_delay=0.05,
        health=MemoryHealthStore() if health else None,
    )


def set_faults(sim: Sim, primary: Any, secondary: Any) -> None:
    sim._post("/_sim/reset", {})
    sim._post("/_sim/script", {"defaults": {"openai": primary, "anthropic": secondary}})


def counts(sim: Sim) -> tuple[int, int]:
    got = sim._get("/_sim/counts")
    return int(got["openai"]), int(got["anthropic"])


#: Why a failed call ended short of every try: the health store's part in it.
HEALTH_NOTES = ("retry budget empty", "circuit open: no more retries")


async def drive(fallback: FallbackAgent, more: Callable[[], bool]) -> tuple[int, int, int]:
    """Keep ``IN_FLIGHT`` calls running while ``more()`` says so.

    Returns (calls, failed, failed_by_health): the last counts failed calls in which
    the store cut a retry or skipped a provider (the rest failed every try).
    """
    calls = failed = by_health = 0

    async def worker() -> None:
        nonlocal calls, failed, by_health
        while more():
            calls += 1
            try:
                await fallback.run("ping")
            except FallbackError as e:
                failed += 1
                by_health += any(
                    a.reason == "circuit_open" or a.note in HEALTH_NOTES for a in e.attempts
                )

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    return calls, failed, by_health


async def flaky(sim: Sim, n: int, rate: float) -> None:
    print(
        f"\n# flaky: {n} calls, 2 providers each failing {rate:.0%} independently, "
        f"{IN_FLIGHT} in flight"
    )
    for health in (False, True):
        set_faults(
            sim,
            {"flaky": rate, "seed": 1, "fault": FAIL},
            {"flaky": rate, "seed": 2, "fault": FAIL},
        )
        fallback = agent(sim, health)
        started = 0

        def more() -> bool:
            nonlocal started
            started += 1
            return started <= n

        rss0, t0 = rss_mb(), time.perf_counter()
        calls, failed, by_health = await drive(fallback, more)
        wall = time.perf_counter() - t0
        up = counts(sim)
        print(
            f"health={'memory' if health else 'none  '} calls={calls} failed={failed} "
            f"({100 * failed / calls:.3f}%; health cut a try in {by_health}) "
            f"upstream={sum(up)} (primary {up[0]}, secondary "
            f"{up[1]}) wall={wall:.1f}s rss_start={rss0:.1f}MiB rss_end={rss_mb():.1f}MiB"
        )


async def timed(sim: Sim, name: str, seconds: float, primary: Any, secondary: Any) -> None:
    print(f"\n# {name}: {IN_FLIGHT} in flight for {seconds} s")
    for health in (False, True):
        set_faults(sim, primary, secondary)
        fallback = agent(sim, health)
        end = time.monotonic() + seconds
        calls, failed, _ = await drive(fallback, lambda end=end: time.monotonic() < end)
        up = counts(sim)
        print(
            f"health={'memory' if health else 'none  '} calls={calls} failed={failed} "
            f"upstream primary={up[0]} secondary={up[1]} total={sum(up)}"
        )


async def main(args: argparse.Namespace) -> None:
    sim = Sim()
    try:
        if args.only in (None, "flaky"):
            await flaky(sim, args.calls, args.flaky_rate)
        if args.only in (None, "dead"):
            await timed(
                sim, "dead primary (100% 503), healthy secondary", args.dead_seconds, FAIL, "ok"
            )
        if args.only in (None, "all-down"):
            await timed(sim, "every provider down (100% 503)", args.down_seconds, FAIL, FAIL)
    finally:
        await close_shared_client()
        sim.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--flaky-rate", type=float, default=0.3)
    parser.add_argument("--dead-seconds", type=float, default=10.0)
    parser.add_argument("--down-seconds", type=float, default=3.5)
    parser.add_argument("--only", choices=["flaky", "dead", "all-down"])
    asyncio.run(main(parser.parse_args()))
