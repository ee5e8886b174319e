"""Hedged requests over real loopback HTTP: tail latency against extra upstream requests.

A simulated server in its own process plays three providers (OpenAI, Anthropic
and Gemini routes) with the same latency distribution, drawn independently: the
first token after 20 ms, or after 2 s with probability 5% (``Fault.latency``).
The chain (OpenAI, Anthropic, Gemini) runs ``--calls`` calls started at ``--rate``
per second (an open loop: the same load in every mode), after ``--warmup`` calls
that are not counted (they also give ``"p95"`` its samples), with hedging off,
``hedge_after=0.1``, ``hedge_after="p95"`` (one hedge, to the second provider) and
``hedge_after=0.1, max_hedges=2`` (a second hedge, to the third).

Reported: p50/p99/p99.9 latency and the upstream requests beyond one per call.
Target: p99 at least 5x lower than without hedging, for at most 10% extra requests.

    python bench/hedging.py [--calls 2000] [--rate 200] [--warmup 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from deadlines import Routes, pct

from orchestrator import FallbackAgent
from providers import AnthropicMessages, GeminiGenerate, OpenAIChat

KEY = "sk-bench-not-a-real-key"
MODES: dict[str, dict[str, Any]] = {
    "off": {},
    "hedge_after=0.1": {"hedge_after": 0.1},
    'hedge_after="p95"': {"hedge_after": "p95"},
    "hedge_after=0.1, max_hedges=2": {"hedge_after": 0.1, "max_hedges": 2},
}


def latency(seed: int) -> dict[str, Any]:
    return {"latency": {"fast": 0.02, "slow": 2.0, "rate": 0.05, "seed": seed}}


async def measure(sim: Routes, mode: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    sim.defaults({"openai": latency(1), "anthropic": latency(2), "gemini": latency(3)})
    agent = FallbackAgent(
        [
            OpenAIChat("gpt-sim", base_url=sim.url + "/openai/v1", api_key=KEY),
            AnthropicMessages("claude-sim", base_url=sim.url + "/anthropic", api_key=KEY),
            GeminiGenerate("gemini-sim", base_url=sim.url + "/gemini", api_key=KEY),
        ],
        max_retries=0,
        **mode,
    )
    took: list[float] = []

    async def one(record: bool) -> None:
        t0 = time.perf_counter()
        await agent.run("hello")
        if record:
            took.append(time.perf_counter() - t0)

    async def arrivals(n: int, record: bool) -> None:
        # Open loop: calls start at a steady rate whatever the others do, so every mode
        # puts the same load on the machine (a closed loop would let the slow calls of
        # "off" hold the slots and keep the rest of the machine idle).
        loop = asyncio.get_running_loop()
        start = loop.time()
        calls = []
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / args.rate - loop.time()))
            calls.append(asyncio.create_task(one(record)))
        await asyncio.gather(*calls)

    async with agent:
        await arrivals(args.warmup, False)
        before = sum(sim.counts().values())
        await arrivals(args.calls, True)
        upstream = sum(sim.counts().values()) - before
    return {
        "p50": pct(took, 0.50) * 1000,
        "p99": pct(took, 0.99) * 1000,
        "p99.9": pct(took, 0.999) * 1000,
        "extra": (upstream - args.calls) / args.calls * 100,
    }


async def main(args: argparse.Namespace) -> None:
    sim = Routes()
    try:
        rows = {name: await measure(sim, mode, args) for name, mode in MODES.items()}
    finally:
        sim.close()
    base = rows["off"]["p99"]
    print(
        f"{args.calls} calls started at {args.rate:g}/s; first token 20 ms, "
        "or 2 s with p=5% (every provider)"
    )
    print("| hedging | p50 ms | p99 ms | p99.9 ms | p99 vs off | extra upstream requests |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['p50']:.0f} | {r['p99']:.0f} | {r['p99.9']:.0f} | "
            f"{base / r['p99']:.1f}x lower | {r['extra']:+.1f}% |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0, help="calls started per second")
    parser.add_argument("--warmup", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
