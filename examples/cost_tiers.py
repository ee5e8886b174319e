"""Cost tiers: the cheapest model first; ``accept=`` escalates a weak answer to a dearer one.

Run: python examples/cost_tiers.py

Without keys, the simulated server plays the models: the two OpenAI tiers give
weak answers ("Not sure."), which ``accept`` rejects, so Claude Opus answers.
With OPENAI_API_KEY / ANTHROPIC_API_KEY set, those tiers call the real
services (and usually the cheap tier is good enough). Prints each attempt's
cost from the token usage and the per-million-token prices.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from orchestrator import FallbackAgent, Result
from providers import AnthropicMessages, OpenAIChat
from providers.simulator import Fault, SimulatedServer


def endpoint(env_key: str, sim_url: str) -> dict[str, Any]:
    """Real service when its key is set (key read from the environment), else the simulator."""
    if os.environ.get(env_key):
        return {}
    return {"base_url": sim_url, "api_key": "sim-key"}


def good_enough(result: Result) -> bool:
    """accept=: a reply must be substantive; hedges go to the next tier."""
    hedges = ("not sure", "don't know", "cannot tell")
    return len(result.text) >= 20 and not any(h in result.text.lower() for h in hedges)


async def main() -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.ok("Not sure.", usage=(60, 3)), Fault.ok("I don't know.")])
        sim.script("anthropic", [Fault.ok("The cache key omits the tenant id.", usage=(60, 12))])
        openai = endpoint("OPENAI_API_KEY", sim.openai_url)
        anthropic = endpoint("ANTHROPIC_API_KEY", sim.anthropic_url)
        agent = FallbackAgent(
            [
                OpenAIChat("gpt-5.4-mini", name="gpt-5.4-mini", price=(0.75, 4.50), **openai),
                OpenAIChat("gpt-5.4", name="gpt-5.4", price=(2.50, 15.00), **openai),
                AnthropicMessages(
                    "claude-opus-4-6", name="claude-opus", price=(5.0, 25.0), **anthropic
                ),
            ],
            max_retries=1,
            retry_delay=0.05,
            accept=good_enough,
            on_fallback=lambda frm, to, err: print(
                f"  escalate {frm} -> {to} ({type(err).__name__})"
            ),
        )
        result = await agent.run("Why do users see each other's dashboards? One sentence.")
    for a in result.attempts:
        cost = f"${a.cost_usd:.6f}" if a.cost_usd is not None else "n/a"
        print(f"  {a.agent:<12} {'accepted' if a.ok else a.reason:<9} cost {cost}")
    print(f"answer from {result.handled_by}: {result.text}")
    print(f"total cost ${result.cost_usd or 0:.6f}")


if __name__ == "__main__":
    asyncio.run(main())
