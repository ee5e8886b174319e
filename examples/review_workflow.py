"""Review workflow: the review chain Codex -> Claude -> Gemini inside a two-phase workflow.

Run: python examples/review_workflow.py

Phase "Review" runs a correctness and a security review in parallel; phase
"Summary" summarises both (``{correctness.text}``). Without keys the
simulated server answers and Codex fails with 503s, so each review falls
over to Claude. With OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY set,
those vendors are the real services.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from orchestrator import FallbackAgent
from orchestrator.workflow import Parallel, Phase, Step, Workflow
from providers import AnthropicMessages, GeminiGenerate, OpenAIChat
from providers.simulator import Fault, SimulatedServer

DIFF = "def upload(f):\n-    put(f)\n+    for _ in range(3):\n+        put(f)"


def endpoint(env_key: str, sim_url: str) -> dict[str, Any]:
    if os.environ.get(env_key):
        return {}
    return {"base_url": sim_url, "api_key": "sim-key"}


def review_chain(sim: SimulatedServer, name: str) -> FallbackAgent:
    """The seed's review chain: Codex, then Claude, then Gemini."""
    return FallbackAgent(
        [
            OpenAIChat("gpt-5.4-mini", name="codex", **endpoint("OPENAI_API_KEY", sim.openai_url)),
            AnthropicMessages(
                "claude-sonnet-4-6",
                name="claude",
                **endpoint("ANTHROPIC_API_KEY", sim.anthropic_url),
            ),
            GeminiGenerate(
                "gemini-2.5-flash", name="gemini", **endpoint("GEMINI_API_KEY", sim.gemini_url)
            ),
        ],
        name=name,
        max_retries=1,
        retry_delay=0.05,
        on_fallback=lambda frm, to, err: print(f"  [{name}] fallback {frm} -> {to}"),
    )


async def main() -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503)] * 4)  # both reviews: 2 attempts each on codex
        workflow = Workflow(
            Phase(
                "Review",
                Parallel(
                    Step(
                        "correctness",
                        review_chain(sim, "correctness"),
                        prompt="Find bugs:\n{input}",
                    ),
                    Step(
                        "security",
                        review_chain(sim, "security"),
                        prompt="Security review:\n{input}",
                    ),
                ),
            ),
            Phase(
                "Summary",
                Step(
                    "summary",
                    review_chain(sim, "summary"),
                    prompt="Summarise both reviews:\n{correctness.text}\n{security.text}",
                ),
            ),
            name="pr-review",
        )
        results = await workflow.run(DIFF)
    for step, result in results.items():
        print(f"{step}: answered by {result.handled_by} ({len(result.attempts)} attempt(s))")
        print(f"  {result.text[:70]!r}")


if __name__ == "__main__":
    asyncio.run(main())
