"""Routing overhead: CPU time each ``order=`` strategy adds per call over ``priority``.

Three no-op async children, the memory store (``health=True``), no hedge; batches
interleave every agent so machine noise hits all alike. Reports each strategy's
median CPU per call, what it adds over priority in the same run (target < 2 us),
the ratio, and the median of the per-batch differences against priority (each
batch's noise cancels within it: the steadier figure on a loaded machine).
Affinity (priority with a key) and a Split are measured the same way.

    python bench/routing.py [--batches 40] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import random
import statistics
from collections.abc import Awaitable, Callable

from engine_overhead import cpu_per_call

from orchestrator import FallbackAgent, Request, Response, Split
from orchestrator.health import MemoryHealthStore

_OK = Response("ok")


class Noop:
    """A provider answering at once, priced (for ``cost``) at ``price`` USD per 1M tokens."""

    def __init__(self, name: str, price: float = 1.0) -> None:
        self.name, self.price = name, (price, price)

    async def complete(self, request: Request) -> Response:
        return _OK


def runs() -> dict[str, Callable[[], Awaitable[object]]]:
    """What is measured: one call of each agent (all on one memory store)."""
    store = MemoryHealthStore()

    def chain(**kw: object) -> FallbackAgent:
        kids = [Noop("a", 3), Noop("b", 1), Noop("c", 2)]
        return FallbackAgent(kids, health=store, hedge_after=None, rng=random.Random(1), **kw)  # type: ignore[arg-type]

    out: dict[str, Callable[[], Awaitable[object]]] = {}
    for order in ("priority", "weighted", "least_busy", "latency", "cost"):
        out[order] = functools.partial(chain(order=order).run, "ping")
    out["affinity"] = functools.partial(chain().run, "ping", affinity="conversation-1")
    kids = [Noop("x"), Noop("y")]
    split = Split({"x": 0.5, "y": 0.5}, children=kids, health=store, hedge_after=None)
    out["split"] = functools.partial(split.run, "ping")
    return out


async def main(batches: int, calls: int) -> dict[str, tuple[float, float]]:
    """Each agent's median CPU per call and the median of its per-batch difference
    against priority (batches interleave every agent, as engine_overhead's do)."""
    measured = runs()
    for fn in measured.values():  # warm up
        await cpu_per_call(fn, 200)
    cpu: dict[str, list[float]] = {name: [] for name in measured}
    gc.disable()
    try:
        for _ in range(batches):
            for name, fn in measured.items():
                cpu[name].append(await cpu_per_call(fn, calls))
            gc.collect()
    finally:
        gc.enable()
    base = cpu["priority"]
    return {
        name: (
            statistics.median(v),
            statistics.median(x - b for x, b in zip(v, base, strict=True)),
        )
        for name, v in cpu.items()
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=40, help="batches (the median is taken)")
    ap.add_argument("--calls", type=int, default=2000, help="calls of each agent per batch")
    args = ap.parse_args()
    med = asyncio.run(main(args.batches, args.calls))
    base = med["priority"][0]
    print(f"{'order':<12} {'us CPU/call':>12} {'added':>8} {'ratio':>6} {'paired':>8}")
    for name, (us, paired) in med.items():
        print(f"{name:<12} {us:12.2f} {us - base:+8.2f} {us / base:6.3f} {paired:+8.2f}")
