"""Engine overhead: CPU time FallbackAgent.run adds over awaiting the bare function.

No I/O, no sleeps: a no-op async FunctionProvider. Reports the median over
batches of the per-call CPU time difference, interleaving the bare loop and the
agent loop so machine noise hits both alike.

    python bench/engine_overhead.py [--batches 60] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import statistics
import time
from collections.abc import Awaitable, Callable

from orchestrator import FallbackAgent, Request
from orchestrator.errors import ServerError
from providers import FunctionProvider

HOPS = 4


async def noop(request: Request) -> str:
    return "ok"


async def failing(request: Request) -> str:
    raise ServerError("down", status=503)


async def cpu_per_call(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    t0 = time.process_time_ns()
    for _ in range(calls):
        await fn()
    return (time.process_time_ns() - t0) / calls / 1000.0  # microseconds


async def interleaved(
    runs: dict[str, Callable[[], Awaitable[object]]],
    batches: int,
    calls: int,
    fewer: dict[str, int] | None = None,
) -> dict[str, float]:
    """Each run's median CPU per call over ``batches``, every batch running each in turn
    (``fewer``: calls per batch for the slow ones), so machine noise hits all alike."""
    for fn in runs.values():  # warm up
        await cpu_per_call(fn, 200)
    gc.disable()
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for _ in range(batches):
            for name, fn in runs.items():
                cpu[name].append(await cpu_per_call(fn, (fewer or {}).get(name, calls)))
            gc.collect()
    finally:
        gc.enable()
    return {name: statistics.median(v) for name, v in cpu.items()}


def agents() -> dict[str, FallbackAgent]:
    """The agents measured: one child; four failing children then one (per hop); two
    children whose first answers, with the default hedge (``"auto"``) and without."""
    ok, spare = FunctionProvider(noop, name="ok"), FunctionProvider(noop, name="spare")
    down = [FunctionProvider(failing, name=f"down{i}") for i in range(HOPS)]
    return {
        "success": FallbackAgent([ok], max_retries=2),
        "chain": FallbackAgent([*down, ok], max_retries=0),
        "two_hedged": FallbackAgent([ok, spare]),
        "two_unhedged": FallbackAgent([ok, spare], hedge_after=None),
    }


async def main(batches: int, calls: int) -> dict[str, float]:
    req = Request("ping")

    async def bare() -> object:
        return await noop(req)

    runs: dict[str, Callable[[], Awaitable[object]]] = {"bare": bare}
    for name, agent in agents().items():
        runs[name] = functools.partial(agent.run, "ping")
    med = await interleaved(runs, batches, calls, {"chain": calls // 4})
    return {
        "bare_await_us": med["bare"],
        "success_added_us": med["success"] - med["bare"],
        "per_hop_added_us": (med["chain"] - med["success"]) / HOPS,
        "two_hedged_added_us": med["two_hedged"] - med["bare"],
        "two_unhedged_added_us": med["two_unhedged"] - med["bare"],
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    f = asyncio.run(main(args.batches, args.calls))
    print(f"bare await of the function:       {f['bare_await_us']:7.2f} us CPU/call")
    print(f"FallbackAgent.run, success path: +{f['success_added_us']:6.2f} us CPU/call (<= 25)")
    print(f"per failover hop (no retries):   +{f['per_hop_added_us']:6.2f} us CPU/hop  (<= 80)")
    hedged, unhedged = f["two_hedged_added_us"], f["two_unhedged_added_us"]
    print(f"two children, default hedge:     +{hedged:6.2f} us CPU/call (<= unhedged + 15)")
    print(f"two children, hedge_after=None:  +{unhedged:6.2f} us CPU/call")
