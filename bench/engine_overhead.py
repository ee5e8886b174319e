"""Engine overhead: CPU time FallbackAgent.run adds over awaiting the bare function.

No I/O, no sleeps: a no-op async FunctionProvider. Reports the median over
batches of the per-call CPU time difference, interleaving the bare loop and the
agent loop so machine noise hits both alike.

    python bench/engine_overhead.py [--batches 60] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable

from orchestrator import FallbackAgent, Request
from orchestrator.errors import ServerError
from providers import FunctionProvider


async def noop(request: Request) -> str:
    return "ok"


async def failing(request: Request) -> str:
    raise ServerError("down", status=503)


async def cpu_per_call(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    t0 = time.process_time_ns()
    for _ in range(calls):
        await fn()
    return (time.process_time_ns() - t0) / calls / 1000.0  # microseconds


async def main(batches: int, calls: int) -> dict[str, float]:
    req = Request("ping")
    ok = FunctionProvider(noop, name="ok")
    success = FallbackAgent([ok], max_retries=2)
    hops = 4
    chain = FallbackAgent(
        [*(FunctionProvider(failing, name=f"down{i}") for i in range(hops)), ok], max_retries=0
    )

    async def bare() -> object:
        return await noop(req)

    async def run_success() -> object:
        return await success.run("ping")

    async def run_chain() -> object:
        return await chain.run("ping")

    for fn in (bare, run_success, run_chain):  # warm up
        await cpu_per_call(fn, 200)
    gc.disable()
    base, succ, hop = [], [], []
    try:
        for _ in range(batches):
            b = await cpu_per_call(bare, calls)
            s = await cpu_per_call(run_success, calls)
            c = await cpu_per_call(run_chain, calls // 4)
            base.append(b)
            succ.append(s - b)
            hop.append((c - s) / hops)
            gc.collect()
    finally:
        gc.enable()
    figures = {
        "bare_await_us": statistics.median(base),
        "success_added_us": statistics.median(succ),
        "per_hop_added_us": statistics.median(hop),
    }
    return figures


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    f = asyncio.run(main(args.batches, args.calls))
    print(f"bare await of the function:       {f['bare_await_us']:7.2f} us CPU/call")
    print(f"FallbackAgent.run, success path: +{f['success_added_us']:6.2f} us CPU/call (<= 25)")
    print(f"per failover hop (no retries):   +{f['per_hop_added_us']:6.2f} us CPU/hop  (<= 80)")
