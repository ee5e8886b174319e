"""A script for the many-loops test: N calls through a shared RedisHealthStore, each on its
own event loop (``run_sync`` or ``asyncio.run``), then exit.

Run as ``python -m tests.orchestrator.health.redis.loops_child REDIS_URL PREFIX OPENAI_URL
MODE N``: prints ``ready`` once imported, starts on a line on stdin (so every process
calls at once, however long imports take on a loaded machine), prints ``done`` at the end.
"""

from __future__ import annotations

import asyncio
import sys

from orchestrator import FallbackAgent
from orchestrator.health import RedisHealthStore
from providers import OpenAIChat


def main(redis_url: str, prefix: str, openai_url: str, mode: str, calls: int) -> None:
    store = RedisHealthStore(redis_url, key_prefix=prefix)
    provider = OpenAIChat("gpt-sim", base_url=openai_url, api_key="sk-sim")
    agent = FallbackAgent([provider], health=store)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(calls):
        if mode == "run_sync":
            agent.run_sync("hi")
        else:
            asyncio.run(agent.run("hi"))
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5], int(sys.argv[5]))
