"""Every fault x every wire format x {complete, stream}, through a FallbackAgent.

Where ``test_http_matrix`` checks the class each provider maps a fault to, this
checks the action the taxonomy requires of the engine, counted at the server:
transient and invalid output are retried once (2 upstream requests) then
handed over, but a timeout hands over at once (its retry waits for the next child to fail,
issue 17 item 18); unusable and a long Retry-After hand over at once (1 request);
terminal errors are raised as themselves with no fallback (1 request).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from orchestrator import FallbackAgent, Request, RetryPolicy
from orchestrator import errors as E
from providers import FunctionProvider
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import CASES, VENDORS, make

# The provider's timeout bounds a whole attempt, streams included (issue 8): it ends the
# "hang" cases, and every other reply must fit in it even on a loaded 2-core CI machine.
TIMEOUT = 0.5


def expected_action(error_class: type[E.ProviderError]) -> tuple[str, int]:
    """(action, upstream requests) under max_retries=1, max_retry_after=1 s."""
    if issubclass(error_class, E.RateLimited):
        return "fallback", 1  # the scripted Retry-After (2 s) exceeds max_retry_after
    if issubclass(error_class, E.TerminalError):
        return "raise", 1
    if issubclass(error_class, E.UnusableError):
        return "fallback", 1
    if error_class.retried_last:
        return "fallback", 1  # a timeout hands over at once: its retry waits for the backup
    return "fallback", 2  # transient and invalid output: one retry, then hand over


async def run(agent: FallbackAgent, mode: str) -> str:
    if mode == "complete":
        return (await agent.run(Request("What is the capital of France?"))).text or ""
    async with agent.stream("What is the capital of France?") as s:
        chunks = [c async for c in s]
    assert "".join(chunks) == s.result.text
    return s.result.handled_by or ""


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", [*VENDORS, "http"])
@pytest.mark.parametrize(("label", "fault", "mapped"), CASES, ids=[c[0] for c in CASES])
async def test_fault_action(
    sim: SimulatedServer,
    route: str,
    mode: str,
    label: str,
    fault: Callable[[], Fault],
    mapped: Callable[[str], type[E.ProviderError]],
) -> None:
    sim.set_default(route, fault())
    backup_calls: list[Any] = []

    async def backup(request: Request) -> str:
        backup_calls.append(request)
        return "backup"

    primary = make(route, sim, timeout=TIMEOUT)
    agent = FallbackAgent(
        [primary, FunctionProvider(backup)],
        policy=RetryPolicy(max_retries=1, strategy="none", max_retry_after=1.0),
        # The taxonomy's action alone: the default hedge (a third of the 0.5 s timeout) would
        # race it on a loaded machine (the backup answering before the primary's request).
        hedge_after=None,
    )
    # A broken event mid-stream (invalid_json), after text was delivered, is retried and
    # handed over like any invalid output: the default mid_stream="continue" goes on from
    # the delivered text (test_broken_event_mid_stream_continues_on_the_next_child).
    action, upstream = expected_action(mapped(route))
    if action == "raise":
        with pytest.raises(mapped(route)):
            await run(agent, mode)
        assert backup_calls == []
    else:
        outcome = await run(agent, mode)
        assert outcome == "backup"
        assert len(backup_calls) == 1
    assert sim.count(route) == upstream, f"{label} on {route}/{mode}"


@pytest.mark.parametrize("route", VENDORS)
async def test_broken_event_mid_stream_continues_on_the_next_child(
    sim: SimulatedServer, route: str
) -> None:
    sim.set_default(route, Fault.invalid_json())
    seen: list[list[tuple[str, str]]] = []

    async def backup(request: Request) -> str:
        seen.append([(m.role, m.content) for m in request.messages])
        return " and the rest"

    agent = FallbackAgent(
        [make(route, sim, timeout=TIMEOUT), FunctionProvider(backup)],
        max_retries=0,
        mid_stream="continue",
        hedge_after=None,  # continuation after delivered text, not a hedge racing it
    )
    async with agent.stream("What is the capital of France?") as s:
        chunks = [c async for c in s]
    partial = "".join(chunks[:-1])
    assert partial and chunks[-1] == " and the rest"
    assert seen == [[("user", "What is the capital of France?"), ("assistant", partial)]]
    assert sim.count(route) == 1 and s.result.handled_by == "backup"
