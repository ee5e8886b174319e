"""Basic failover: three providers in priority order; the first two fail on purpose.

Run: python examples/basic_failover.py
"""

from __future__ import annotations

import asyncio

from orchestrator import FallbackAgent, FallbackError, Request
from orchestrator.errors import AuthenticationFailed, ServerError
from providers import FunctionProvider

calls = {"codex": 0}


async def call_codex(request: Request) -> str:
    calls["codex"] += 1
    raise ServerError("upstream 503", status=503)  # transient: retried, then falls over


async def call_claude(request: Request) -> str:
    raise AuthenticationFailed("invalid x-api-key", status=401)  # unusable: falls over at once


async def call_gemini(request: Request) -> str:
    return f"LGTM: {request.prompt!r} reviewed by gemini"


async def main() -> None:
    agent = FallbackAgent(
        [
            FunctionProvider(call_codex, name="codex"),
            FunctionProvider(call_claude, name="claude"),
            FunctionProvider(call_gemini, name="gemini"),
        ],
        max_retries=2,
        retry_strategy="exponential",
        retry_delay=0.05,
        on_retry=lambda name, n, err, delay: print(
            f"  retry   {name} attempt {n} failed ({type(err).__name__}); waiting {delay:.2f}s"
        ),
        on_fallback=lambda frm, to, err: print(
            f"  fallback {frm} -> {to} after {type(err).__name__}"
        ),
        on_all_failed=lambda errors: print(f"  all {len(errors)} attempts failed"),
    )
    result = await agent.run("Review this pull request")
    print(f"answer: {result.text}")
    print(f"handled_by={result.handled_by} latency={result.latency:.3f}s")
    for a in result.attempts:
        outcome = "ok" if a.error is None else f"{type(a.error).__name__} ({a.reason})"
        print(f"  attempt {a.agent}#{a.attempt_number}: {outcome} in {a.duration * 1000:.1f} ms")

    print("\nevery provider down:")
    broken = FallbackAgent(
        [FunctionProvider(call_codex, name="codex"), FunctionProvider(call_claude, name="claude")],
        max_retries=1,
        retry_delay=0.01,
    )
    try:
        await broken.run("Review this pull request")
    except FallbackError as e:
        print(f"  {e}")
        print(f"  attempts recorded: {len(e.attempts)}")


if __name__ == "__main__":
    asyncio.run(main())
