"""Multi-region: each vendor tries its home region first; chains nest.

Run: python examples/multi_region.py

``FallbackAgent([openai_regions, anthropic_regions])`` where each child is itself
a ``FallbackAgent`` over regions. The us-east endpoint is down (nothing
listens on its port), so after one retry the OpenAI chain falls over to
eu-west; Anthropic is never called. Without keys eu-west is the simulated
server; with OPENAI_API_KEY / ANTHROPIC_API_KEY set it is the real API.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from orchestrator import FallbackAgent
from providers import AnthropicMessages, OpenAIChat
from providers.simulator import SimulatedServer


def closed_port() -> int:
    """A loopback port nothing listens on: a region that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def endpoint(env_key: str, sim_url: str) -> dict[str, Any]:
    if os.environ.get(env_key):
        return {}
    return {"base_url": sim_url, "api_key": "sim-key"}


def log_retry(name: str, attempt: int, error: BaseException, delay: float) -> None:
    print(f"  retry    {name} attempt {attempt}: {type(error).__name__}; waiting {delay:.2f}s")


def log_fallback(frm: str, to: str, error: BaseException) -> None:
    print(f"  fallback {frm} -> {to} after {type(error).__name__}")


async def main() -> None:
    down = f"http://127.0.0.1:{closed_port()}"
    hooks: dict[str, Any] = {"on_retry": log_retry, "on_fallback": log_fallback}
    async with SimulatedServer() as sim:
        openai = FallbackAgent(
            [
                OpenAIChat(
                    "gpt-5.4-mini", base_url=f"{down}/v1", api_key="unused", name="openai-us-east"
                ),
                OpenAIChat(
                    "gpt-5.4-mini",
                    name="openai-eu-west",
                    **endpoint("OPENAI_API_KEY", sim.openai_url),
                ),
            ],
            name="openai",
            max_retries=1,
            retry_delay=0.05,
            **hooks,
        )
        anthropic = FallbackAgent(
            [
                AnthropicMessages(
                    "claude-sonnet-4-6",
                    name="anthropic-us",
                    **endpoint("ANTHROPIC_API_KEY", sim.anthropic_url),
                ),
                AnthropicMessages(
                    "claude-sonnet-4-6",
                    name="anthropic-eu",
                    **endpoint("ANTHROPIC_API_KEY", sim.anthropic_url),
                ),
            ],
            name="anthropic",
            max_retries=1,
            retry_delay=0.05,
            **hooks,
        )
        agent = FallbackAgent([openai, anthropic], name="global", max_retries=0, **hooks)
        result = await agent.run("Translate 'service restored' into French.")
        print(f"answered by {result.handled_by}: {result.text}")
        for a in result.attempts:
            print(f"  {a.agent}#{a.attempt_number}: {a.kind_label()}")
        print(f"anthropic requests: {sim.count('anthropic')}")


if __name__ == "__main__":
    asyncio.run(main())
