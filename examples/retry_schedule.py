"""The documented retry schedule, on fake time: max_retries=3, exponential, 2 s -> 2, 4, 8 s.

Run: python examples/retry_schedule.py
"""

from __future__ import annotations

import asyncio

from orchestrator import FallbackAgent, Request
from orchestrator.errors import RateLimited, ServerError
from orchestrator.testing import FakeClock
from providers import FunctionProvider


async def always_503(request: Request) -> str:
    raise ServerError("service unavailable", status=503)


async def rate_limited_once(request: Request) -> str:
    rate_limited_once.calls += 1  # type: ignore[attr-defined]
    if rate_limited_once.calls == 1:  # type: ignore[attr-defined]
        raise RateLimited("slow down", retry_after=7.0)
    return "answered after honouring Retry-After"


rate_limited_once.calls = 0  # type: ignore[attr-defined]


async def main() -> None:
    for strategy in ("exponential", "linear", "none"):
        clock = FakeClock()
        agent = FallbackAgent(
            [
                FunctionProvider(always_503, name="primary"),
                FunctionProvider(lambda r: "from backup", name="backup"),
            ],
            max_retries=3,
            retry_strategy=strategy,
            retry_delay=2.0,
            clock=clock,
        )
        result = await agent.run("hello")
        print(f"{strategy:<12} sleeps={clock.sleeps} then {result.handled_by} answered")

    clock = FakeClock()
    agent = FallbackAgent(
        [FunctionProvider(rate_limited_once, name="limited")], retry_strategy="none", clock=clock
    )
    result = await agent.run("hello")
    print(f"{'retry-after':<12} sleeps={clock.sleeps}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
