"""A replica for the capacity tests: 50 calls in flight through one shared Redis limiter.

Run as ``python -m tests.orchestrator.health.redis.capacity_child REDIS_URL PREFIX
OPENAI_URL WINDOW``: prints ``ready`` once imported; then, for each phase named on a
line of stdin (``rpm``, ``tpm``, ``budget``), runs that phase (50 workers) and prints
``done PHASE OK REFUSED DEGRADED SECONDS TIMES`` (DEGRADED: how often Redis did not
answer in time; TIMES a JSON object: ``refused``, when the replica was refused,
``time.monotonic()``; ``admitted``, when Redis admitted each call, on Redis's clock); an
empty line ends it.

- ``rpm``: ``Limits(rpm=600, window=WINDOW)``, for three windows.
- ``tpm``: ``Limits(tpm=30_000, window=WINDOW)``, replies of the sizes the simulator's
  script gives (``max_tokens=300``), for three windows.
- ``budget``: the chain's ``Budget(usd=1.00)``, until ``BudgetExceeded``.

A worker refused with ``RateLimited`` sleeps its ``retry_after`` (plus up to 2 ms) and asks
again, so demand always exceeds the limit.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from typing import Any

from orchestrator import Budget, FallbackAgent, Limits, Request
from orchestrator.capacity.redis import RedisCapacity
from orchestrator.errors import BudgetExceeded, RateLimited
from orchestrator.health import RedisHealthStore
from orchestrator.testing import capture_events
from providers import OpenAIChat

IN_FLIGHT = 50


def agent_for(phase: str, store: RedisHealthStore, url: str, window: float) -> FallbackAgent:
    limits = {"rpm": Limits(rpm=600, window=window), "tpm": Limits(tpm=30_000, window=window)}
    provider = OpenAIChat(
        f"{phase}-sim",
        base_url=url,
        api_key="sk-sim",
        price=(1000.0, 1000.0),  # $0.001 a token: a $1.00 budget is a few hundred calls
        limits=limits.get(phase),
        timeout=10,
    )
    budget = Budget(usd=1.00, per="day") if phase == "budget" else None
    return FallbackAgent([provider], health=store, budget=budget, max_retries=0, hedge_after=None)


async def phase_run(
    agent: FallbackAgent, phase: str, until: float, refusals: list[float]
) -> tuple[int, int]:
    loop = asyncio.get_running_loop()
    counts = [0, 0]
    request = Request("hi", max_tokens=300 if phase == "tpm" else 4)

    async def worker() -> None:
        while loop.time() < until:
            try:
                await agent.run(request)
                counts[0] += 1
            except RateLimited as e:
                counts[1] += 1
                refusals.append(time.monotonic())
                await asyncio.sleep((e.retry_after or 0.005) + random.uniform(0, 0.002))
            except BudgetExceeded:
                counts[1] += 1
                return

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    return counts[0], counts[1]


def record_admissions(capacity: RedisCapacity, admitted: list[float]) -> None:
    """Note in ``admitted`` when Redis admitted each call ``capacity`` took: the TAKE
    script's ``{"ok", now}`` reply, on Redis's clock (``TIME``), the one every replica's
    decision was made on; a request's arrival at the simulator comes later, by however
    long a loaded machine kept the replica from sending it."""
    scripts_for_loop = capacity._script_for_loop

    def recording() -> tuple[Any, Any]:
        take, settle = scripts_for_loop()

        async def take_and_note(keys: list[str], args: list[str]) -> Any:
            got = await take(keys=keys, args=args)
            if args[0] and str(got[0]) == "ok":  # a call id: a call, not a look
                admitted.append(float(got[1]))
            return got

        return take_and_note, settle

    capacity._script_for_loop = recording  # type: ignore[method-assign]


async def main(redis_url: str, prefix: str, url: str, window: float) -> None:
    # A loaded test machine starves a process for seconds (degraded twice with 5 s at load
    # 12): wait for Redis rather than fall back to the local share (that has its own test).
    store = RedisHealthStore(redis_url, key_prefix=prefix, replicas=8, timeout=30)
    admitted: list[float] = []
    record_admissions(store.capacity, admitted)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while phase := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
        agent = agent_for(phase, store, url, window)
        refusals: list[float] = []
        admitted.clear()
        with capture_events() as events:
            began = loop.time()
            ok, refused = await phase_run(agent, phase, began + 3 * window + 0.2, refusals)
        degraded = sum(e["event"] == "capacity_store_degraded" for e in events)
        took = loop.time() - began
        times = json.dumps({"refused": refusals, "admitted": admitted})
        print(f"done {phase} {ok} {refused} {degraded} {took:.2f} {times}", flush=True)
    await store.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4], float(sys.argv[4])))
