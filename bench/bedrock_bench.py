"""S1 for Amazon Bedrock: CPU per call of BedrockConverse (SigV4 signing included) against
OpenAIChat, in one run, against one simulator process (which checks every signature).

S1 is providers_bench.py's: a healthy primary, sequential calls, a two-child
FallbackAgent (``max_retries=0``). Rounds interleave the implementations; the
client side measured here is the only thing in this process. Also printed: the
signing alone (``AwsSigner.sign``, one SigV4 per call with a signer built once).

    python bench/bedrock_bench.py [--rounds 5] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

import botocore.credentials
from providers_bench import Sim, Tally, batch

from orchestrator import FallbackAgent
from providers import BedrockConverse, OpenAIChat
from providers.simulator.server import SIM_AWS_KEY_ID, SIM_AWS_SECRET

KEY = "sk-bench-not-a-real-key"


def agents(url: str) -> dict[str, FallbackAgent]:
    keys = botocore.credentials.Credentials(SIM_AWS_KEY_ID, SIM_AWS_SECRET)

    def bedrock(name: str, region: str) -> BedrockConverse:
        model = "us.anthropic.claude-sonnet-4-6-v1:0"
        return BedrockConverse(
            model, region=region, endpoint_url=url + "/bedrock", credentials=keys, name=name
        )

    def openai(name: str) -> OpenAIChat:
        return OpenAIChat("m", base_url=url + "/openai/v1", api_key=KEY, name=name)

    return {
        "OpenAIChat": FallbackAgent([openai("primary"), openai("secondary")], max_retries=0),
        "BedrockConverse": FallbackAgent(
            [bedrock("us-east-1", "us-east-1"), bedrock("us-west-2", "us-west-2")], max_retries=0
        ),
    }


async def signing(provider: BedrockConverse, n: int = 5000) -> float:
    """Microseconds of CPU per SigV4 signature of a Converse body."""
    await provider._signer.refresh()
    body = b'{"messages":[{"role":"user","content":[{"text":"ping"}]}]}'
    url = provider.base_url + "/model/m/converse"
    start = time.process_time()
    for _ in range(n):
        provider._signer.sign(url, body, {"content-type": "application/json"})
    return (time.process_time() - start) / n * 1e6


async def main(rounds: int, calls: int) -> None:
    sim = Sim()
    try:
        tallies = {name: Tally() for name in ("OpenAIChat", "BedrockConverse")}
        runs = agents(sim.url)
        for agent in runs.values():  # warm up connections, credentials and code paths
            await batch(lambda a=agent: _text(a), 20, False, Tally())
        for _ in range(rounds):
            for name, agent in runs.items():
                await batch(lambda a=agent: _text(a), calls, False, tallies[name])
        bedrock = runs["BedrockConverse"].children[0]
        sign_us = await signing(bedrock)  # type: ignore[arg-type]
    finally:
        sim.close()
    print("| S1 (healthy primary, sequential) | median ms | p99 ms | CPU us/call | failures |")
    print("|---|---|---|---|---|")
    for name, t in tallies.items():
        cpu = t.cpu / t.calls * 1e6
        print(f"| {name} | {t.p(0.5):.2f} | {t.p(0.99):.2f} | {cpu:.0f} | {t.failures} |")
    print(f"\nSigV4 signing alone: {sign_us:.0f} us CPU per request")
    print(f"python {sys.version.split()[0]}, {rounds} rounds of {calls} calls")


async def _text(agent: Any) -> str:
    return str((await agent.run("ping")).text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    asyncio.run(main(args.rounds, args.calls))
