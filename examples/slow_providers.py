"""Slow providers: deadlines inside a call, and hedged requests.

Run: python examples/slow_providers.py

1. The primary accepts the request, then sends only keep-alive comments: with
   ``first_token_timeout=0.5`` the chain answers from the secondary in about
   half a second, although the whole-run ``timeout`` is 60 s.
2. The primary's first token comes after 20 ms, or after 2 s one time in five:
   with ``hedge_after=0.2`` the secondary starts in parallel when the primary is
   late, the first to produce content wins, and the slow call is cancelled
   (recorded with reason ``hedge_lost``).

Both providers are the simulated server (no keys needed).
"""

from __future__ import annotations

import asyncio
import time

from orchestrator import FallbackAgent
from providers import AnthropicMessages, Fault, OpenAIChat
from providers.simulator import SimulatedServer


async def main() -> None:
    async with SimulatedServer() as sim:
        children = [
            OpenAIChat("gpt-5.4-mini", base_url=sim.openai_url, api_key="sim-key"),
            AnthropicMessages("claude-haiku-4-5", base_url=sim.anthropic_url, api_key="sim-key"),
        ]

        sim.set_default("openai", Fault.first_token(3600, keepalive=0.1))
        # max_retries=0: a stalled provider is left at once (retrying it would wait again).
        async with FallbackAgent(
            children, first_token_timeout=0.5, timeout=60, max_retries=0
        ) as agent:
            t0 = time.perf_counter()
            result = await agent.run("Summarise the incident")
            first = result.attempts[0]
            print(
                f"silent primary: answered by {result.handled_by} in "
                f"{time.perf_counter() - t0:.2f}s ({first.agent}: {type(first.error).__name__})"
            )

        sim.set_default("openai", Fault.latency(0.02, 2.0, rate=0.2, seed=4))
        async with FallbackAgent(children, hedge_after=0.2) as agent:
            t0 = time.perf_counter()
            results = await asyncio.gather(*(agent.run(f"question {i}") for i in range(20)))
            hedged = [r for r in results if any(a.reason == "hedge_lost" for a in r.attempts)]
            print(
                f"hedged: 20 calls in {time.perf_counter() - t0:.2f}s, {len(hedged)} hedged, "
                f"slowest {max(r.latency for r in results):.2f}s"
            )


if __name__ == "__main__":
    asyncio.run(main())
