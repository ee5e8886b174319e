"""Capacity overhead: CPU a limiter adds to a healthy call, in memory and in Redis.

The same no-op async FunctionProvider several ways, interleaved in batches so machine
noise hits all alike: no limits (without, then with a memory health store);
``Limits(rpm=10**9, max_concurrency=10**6)`` on a memory store (one take and one
settle per call); the same on a Redis store (one round trip per call: the TAKE
script; a settle, when there is anything to give back (a concurrency slot, tokens,
spend), is a second one the call awaits). Reports the median per-call CPU (us) and
wall time (us) of each and the ratio to the plain call, and the memory limiter's own
cost: over the same agent with a memory health store and no limits, and on a default
agent (``health=None``, as ``FallbackAgent`` is by default: its limits live in the
process's memory store) over the plain call, each the median of per-batch differences.
Also the ``limits`` library (its moving window on the same Redis), for comparison
when it is installed.

    python bench/capacity.py REDIS_URL [--batches 30] [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

from orchestrator import FallbackAgent, Limits, Request
from orchestrator.health import MemoryHealthStore, RedisHealthStore
from providers import FunctionProvider

LIMITS = Limits(rpm=10**9, max_concurrency=10**6)


async def noop(request: Request) -> str:
    return "ok"


async def timed(fn: Callable[[], Awaitable[object]], calls: int) -> tuple[float, float]:
    cpu, wall = time.process_time_ns(), time.perf_counter_ns()
    for _ in range(calls):
        await fn()
    return (
        (time.process_time_ns() - cpu) / calls / 1e3,
        (time.perf_counter_ns() - wall) / calls / 1e3,
    )


async def limits_library(url: str, calls: int) -> tuple[float, float] | None:
    """The ``limits`` library's moving window (async Redis storage), one hit per call."""
    try:
        from limits import RateLimitItemPerMinute
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import MovingWindowRateLimiter
    except ImportError:
        return None
    storage = RedisStorage(url.replace("redis://", "async+redis://"), implementation="redispy")
    limiter = MovingWindowRateLimiter(storage)
    item = RateLimitItemPerMinute(10**9)
    key = uuid.uuid4().hex

    async def hit() -> object:
        return await limiter.hit(item, key)

    return await timed(hit, calls)


async def main(url: str, batches: int, calls: int) -> None:
    req = Request("ping")
    plain = FallbackAgent([FunctionProvider(noop, name="p")], hedge_after=None)
    stored = FallbackAgent(
        [FunctionProvider(noop, name="s")], health=MemoryHealthStore(), hedge_after=None
    )
    memory = FallbackAgent(
        [FunctionProvider(noop, name="m", limits=LIMITS)],
        health=MemoryHealthStore(),
        hedge_after=None,
    )
    default = FallbackAgent([FunctionProvider(noop, name="d", limits=LIMITS)], hedge_after=None)
    store = RedisHealthStore(url, key_prefix=f"bench:{uuid.uuid4().hex[:8]}:")
    redis = FallbackAgent(
        [FunctionProvider(noop, name="r", limits=LIMITS)], health=store, hedge_after=None
    )
    rpm_only = FallbackAgent(
        [FunctionProvider(noop, name="r1", limits=Limits(rpm=10**9))],
        health=store,
        hedge_after=None,
    )
    runs = {
        "plain": plain,
        "memory store, no limits": stored,
        "memory limiter": memory,
        "memory limiter, no store": default,
        "redis rpm+concurrency": redis,
        "redis rpm only": rpm_only,
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    got["limits library (redis)"] = []
    for agent in runs.values():
        await agent.run(req)  # warm up: imports, connections, the script cached
    for _ in range(batches):
        for name, agent in runs.items():
            got[name].append(await timed(lambda a=agent: a.run(req), calls))
        library = await limits_library(url, calls)
        if library is not None:
            got["limits library (redis)"].append(library)
    await store.aclose()
    base_cpu = statistics.median(c for c, _ in got["plain"])
    base_wall = statistics.median(w for _, w in got["plain"])
    print(f"{'':26} {'cpu us':>8} {'x plain':>8} {'wall us':>8} {'x plain':>8}")
    for name, rows in got.items():
        if not rows:
            print(f"{name:26} (not installed)")
            continue
        cpu, wall = statistics.median(c for c, _ in rows), statistics.median(w for _, w in rows)
        print(f"{name:26} {cpu:8.1f} {cpu / base_cpu:8.2f} {wall:8.1f} {wall / base_wall:8.2f}")
    extra = statistics.median(c for c, _ in got["memory limiter"]) - base_cpu
    print(f"memory limiter over plain: +{extra:.1f} us CPU")
    # Each batch runs every agent back to back: the difference within a batch is what the
    # limiter adds at that moment's machine speed (others' load cancels out of it).
    for name, over, what in (
        ("memory limiter", "memory store, no limits", "over the same agent with its store"),
        ("memory limiter, no store", "plain", "on a default agent, over plain"),
    ):
        paired = list(zip(got[name], got[over], got["plain"], strict=True))
        diffs = [a - b for (a, _), (b, _), _ in paired]
        share = statistics.median((a - b) / p for (a, _), (b, _), (p, _) in paired)
        print(
            f"memory limiter {what}: +{statistics.median(diffs):.1f} us CPU per call "
            f"(median of {len(diffs)} batches; {share:.1%} of a plain call)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=500)
    ns = parser.parse_args()
    asyncio.run(main(ns.url, ns.batches, ns.calls))
