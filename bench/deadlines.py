"""Deadlines inside a call, over real loopback HTTP: how soon a stalled provider is left.

A simulated server in its own process plays the primary (OpenAI route) and the
secondary (Anthropic route); the chain runs here.

D1  the primary sends its headers, then only keep-alive comments, never a first
    token; ``first_token_timeout=0.5, timeout=60``: latency of the chain's answer
    (from the secondary), p50/p99 over ``--calls`` calls (target < 0.6 s).
D2  the primary streams 3 chunks, then only keep-alive comments; ``idle_timeout=0.3``:
    how long after the third chunk the stall is detected (target <= 0.3 s + 50 ms).

    python bench/deadlines.py [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from providers_bench import Sim

from orchestrator import FallbackAgent
from orchestrator.errors import StreamStalled
from providers import AnthropicMessages, OpenAIChat

KEY = "sk-bench-not-a-real-key"


class Routes(Sim):
    """The simulator process, with a default fault per route."""

    def defaults(self, specs: dict[str, Any]) -> None:
        self._post("/_sim/reset", {})
        self._post("/_sim/script", {"defaults": specs})

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = self._get("/_sim/counts")
        return counts


def chain(sim: Routes, **kw: Any) -> FallbackAgent:
    return FallbackAgent(
        [
            OpenAIChat("gpt-sim", base_url=sim.url + "/openai/v1", api_key=KEY),
            AnthropicMessages("claude-sim", base_url=sim.url + "/anthropic", api_key=KEY),
        ],
        max_retries=0,
        **kw,
    )


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def no_first_token(sim: Routes, calls: int) -> dict[str, float]:
    sim.defaults({"openai": {"first_token": 3600, "keepalive": 0.1}})
    took = []
    async with chain(sim, first_token_timeout=0.5, timeout=60) as agent:
        await agent.run("warm up")
        for _ in range(calls):
            t0 = time.perf_counter()
            result = await agent.run("hello")
            took.append(time.perf_counter() - t0)
            assert result.handled_by == "anthropic:claude-sim", result.attempts
    return {"p50": statistics.median(took), "p99": pct(took, 0.99), "max": max(took)}


async def stall(sim: Routes, calls: int) -> dict[str, float]:
    sim.defaults({"openai": {"stall": 3, "keepalive": 0.1}})
    late = []
    left: list[float] = []  # when the chain handed over (on_fallback): the stall was seen

    def on_fallback(*_: object) -> None:
        left.append(time.perf_counter())

    async with chain(
        sim, idle_timeout=0.3, mid_stream="continue", on_fallback=on_fallback
    ) as agent:
        await agent.run("warm up")
        for _ in range(calls):
            third = 0.0
            async with agent.stream("one two three four five six") as s:
                n = 0
                async for _chunk in s:
                    n += 1
                    if n == 3:
                        third = time.perf_counter()
            assert isinstance(s.result.attempts[0].error, StreamStalled)
            late.append(left[-1] - third)
    return {"p50": statistics.median(late), "p99": pct(late, 0.99), "max": max(late)}


async def main(calls: int) -> None:
    sim = Routes()
    try:
        d1 = await no_first_token(sim, calls)
        d2 = await stall(sim, calls)
    finally:
        sim.close()
    print(f"D1 no first token, first_token_timeout=0.5 timeout=60, {calls} calls:")
    print(f"   answered by the secondary: {figures(d1)}")
    print(f"D2 stall after 3 chunks, idle_timeout=0.3, {calls} calls:")
    print(f"   third chunk -> stall detected: {figures(d2)}")


def figures(d: dict[str, float]) -> str:
    return "p50 {p50:.3f} s, p99 {p99:.3f} s, max {max:.3f} s".format(**d)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    asyncio.run(main(parser.parse_args().calls))
