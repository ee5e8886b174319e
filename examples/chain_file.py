"""Chain file: load examples/chain.yaml (and chain.toml), run its agent and its workflow.

Run: python examples/chain_file.py

Vendors whose key is not in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,
GEMINI_API_KEY) are pointed at the simulated server, where codex answers 503
three times so the chain falls over to claude. Set the keys to use the real
services. Also shows the same file through the ``failover`` command.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from orchestrator.cli import main as failover
from orchestrator.config import load_config
from providers.simulator import Fault, SimulatedServer

HERE = Path(__file__).resolve().parent
VENDORS = {  # env key -> (base-url env var, simulator route)
    "OPENAI_API_KEY": ("OPENAI_BASE_URL", "openai"),
    "ANTHROPIC_API_KEY": ("ANTHROPIC_BASE_URL", "anthropic"),
    "GEMINI_API_KEY": ("GEMINI_BASE_URL", "gemini"),
}


def print_retry(name: str, attempt: int, error: BaseException, delay: float) -> None:
    """on_retry hook, referenced from the chain file as chain_file:print_retry."""
    print(f"  retry    {name} attempt {attempt}: {type(error).__name__}; waiting {delay:.2f}s")


def print_fallback(frm: str, to: str, error: BaseException) -> None:
    """on_fallback hook, referenced from the chain file as chain_file:print_fallback."""
    print(f"  fallback {frm} -> {to} after {type(error).__name__}")


def use_simulator(sim: SimulatedServer) -> list[str]:
    """Point every vendor without a key at the simulator; returns the simulated routes."""
    simulated = []
    for key, (url_var, route) in VENDORS.items():
        if not os.environ.get(key):
            os.environ[key] = "sim-key"  # the simulator accepts any key
            os.environ[url_var] = getattr(sim, f"{route}_url")
            simulated.append(route)
    os.environ.setdefault("RETRY_DELAY", "0.05")
    return simulated


async def run(path: Path) -> None:
    config = load_config(path)
    print(f"{path.name}: agents {list(config.agents)}, workflows {list(config.workflows)}")
    result = await config.agents["review"].run("Review: retry the upload on 503")
    print(f"  answered by {result.handled_by} after {len(result.attempts)} attempt(s)")
    steps = await config.workflows["release"].run("the uploader patch")
    for name, step in steps.items():
        print(f"  step {name}: answered by {step.handled_by}")


def demo() -> None:
    with SimulatedServer.in_thread() as sim:
        simulated = use_simulator(sim)
        print(f"simulated: {', '.join(simulated) or 'none (all keys set)'}")
        for name in ("chain.yaml", "chain.toml"):
            sim.script("openai", [Fault.status(503)] * 3)
            asyncio.run(run(HERE / name))
        print("\nthe same from the command line: failover run chain.yaml --agent review hello")
        sim.script("openai", [Fault.status(503)] * 3)
        code = failover(["run", str(HERE / "chain.yaml"), "--agent", "review", "hello"])
        print(f"exit code {code}")


if __name__ == "__main__":
    demo()
