"""Workflow composition: FallbackAgent (sequential) and Parallel (simultaneous), both ways.

Run: python examples/workflow_composition.py

1. Chains inside a workflow: a Parallel group whose steps are FallbackAgents,
   one of which keeps failing and is recorded with ``continue_on_error=True``.
2. A workflow inside a chain: a ``Workflow`` is a provider, so it can be the
   first child of a FallbackAgent; when a step of it fails, the chain falls
   over to a plain provider.
Uses the simulated server without keys (real services when keys are set).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from orchestrator import FallbackAgent, Request
from orchestrator.errors import QuotaExhausted
from orchestrator.workflow import Parallel, Phase, Step, Workflow
from providers import AnthropicMessages, FunctionProvider, OpenAIChat
from providers.simulator import Fault, SimulatedServer


def endpoint(env_key: str, sim_url: str) -> dict[str, Any]:
    if os.environ.get(env_key):
        return {}
    return {"base_url": sim_url, "api_key": "sim-key"}


def out_of_quota(request: Request) -> str:
    raise QuotaExhausted("monthly quota used up", status=429)


async def main() -> None:
    async with SimulatedServer() as sim:
        openai = endpoint("OPENAI_API_KEY", sim.openai_url)
        anthropic = endpoint("ANTHROPIC_API_KEY", sim.anthropic_url)

        def gpt(name: str) -> OpenAIChat:
            return OpenAIChat("gpt-5.4-mini", name=name, **openai)

        claude = AnthropicMessages("claude-sonnet-4-6", name="claude", **anthropic)
        # a chain that cannot answer: its only provider is out of quota
        doomed = FallbackAgent([FunctionProvider(out_of_quota, name="quota")], name="doomed")

        print("1. chains inside a Parallel group")
        fan_out = Workflow(
            Phase(
                "Draft",
                Parallel(
                    Step("title", FallbackAgent([gpt("gpt-a"), claude]), prompt="Title: {input}"),
                    Step("blurb", FallbackAgent([gpt("gpt-b"), claude]), prompt="Blurb: {input}"),
                    Step("extra", doomed, prompt="Extra: {input}", continue_on_error=True),
                    limit=2,
                ),
            ),
            name="fan-out",
        )
        results = await fan_out.run("failover-orchestrator 0.1")
        for step, result in results.items():
            print(f"  {step}: answered by {result.handled_by}")
        for step, error in results.failures.items():
            print(f"  {step}: failed and recorded ({type(error).__name__})")

        print("2. a workflow inside a chain")
        # the writer always uses the simulator, scripted to refuse its key: that step fails
        writer = AnthropicMessages(
            "claude-haiku-4-5", name="writer", base_url=sim.anthropic_url, api_key="k"
        )
        sim.script("anthropic", [Fault.auth()])
        two_step = Workflow(
            Phase("Plan", Step("plan", FallbackAgent([gpt("planner")]), prompt="Plan: {input}")),
            Phase("Write", Step("write", FallbackAgent([writer]), prompt="{plan.text}")),
            name="plan-then-write",
        )
        chain = FallbackAgent(
            [two_step, claude],
            max_retries=0,
            on_fallback=lambda frm, to, err: print(
                f"  fallback {frm} -> {to} ({type(err).__name__})"
            ),
        )
        result = await chain.run("release notes for 0.1")
        print(f"  answered by {result.handled_by}: {result.text[:60]!r}")


if __name__ == "__main__":
    asyncio.run(main())
