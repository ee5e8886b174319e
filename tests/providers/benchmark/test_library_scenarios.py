"""The benchmark's sixteen scenarios through the library: FallbackAgent with OpenAIChat and
AnthropicMessages against the simulator, default settings (:mod:`.scenarios`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from orchestrator import FallbackAgent, Result
from orchestrator.errors import GuardrailTriggered
from providers import Fault, SimulatedServer
from tests.providers.benchmark.scenarios import (
    DOWN_REQUESTS,
    EVERY,
    FALLBACK,
    PRIMARY,
    REQUESTS,
    SCENARIOS,
    SLACK,
    F,
    Scenario,
    chain,
)
from tests.timing import Stopwatch


async def _call(agent: FallbackAgent, stream: bool) -> Result:
    if not stream:
        return await agent.run("Summarise the incident report")
    async with agent.stream("Summarise the incident report") as s:
        text = "".join([chunk async for chunk in s])
    assert text == s.result.text  # what the caller saw is the answer, no part twice
    return s.result


@pytest.mark.parametrize("case", [s.param() for s in SCENARIOS])
async def test_library_scenario(sim: SimulatedServer, case: Scenario) -> None:
    case.script(sim)
    async with chain(sim) as agent:
        watch = Stopwatch()  # the process's own seconds: not the machine's other work
        if case.answered_by is None:
            with pytest.raises(GuardrailTriggered) as info:
                await _call(agent, case.stream)
            assert case.reason is not None and case.reason in str(info.value)  # the reason
            assert sim.count("anthropic") == 0  # a refusal is not asked of another model
        else:
            result = await _call(agent, case.stream)
            assert result.handled_by == case.answered_by
            assert result.text
            failed = [a for a in result.attempts if not a.ok]
            assert all(a.cost_usd is None and not a.usage for a in failed if a.error)
        elapsed, wall = watch.elapsed(), watch.wall()
    assert case.at_least <= wall, wall  # waited at least: on the wall clock
    assert elapsed < case.within + SLACK, (elapsed, wall)
    assert sim.count("openai") <= case.primary_calls  # backed off, never hammered


async def test_503_primary_reports_the_fallback_model_and_usage(sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.status(503))
    sim.script("anthropic", [Fault.ok("from the fallback", usage=(12, 5))])
    async with chain(sim) as agent:
        result = await agent.run("hello")
    assert (result.handled_by, result.model) == (FALLBACK, "claude-fallback")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 5)
    assert [a.usage for a in result.attempts if a.error is not None] == [None] * 3  # not billed


async def test_primary_down_60s_then_healthy_over_20_requests(sim: SimulatedServer) -> None:
    """Served by the fallback while the primary is down, without hammering it; back on the
    primary once it is healthy again."""
    sim.set_default("openai", Fault.status(503))
    answered: list[str | None] = []
    async with chain(sim) as agent:
        started = time.monotonic()
        for i in range(REQUESTS):
            if i == DOWN_REQUESTS:  # by count: a late request is still a "down" one
                sim.set_default("openai", Fault.ok())
            sent = Stopwatch()
            result = await agent.run(f"request {i}")
            answered.append(result.handled_by)
            assert sent.elapsed() < 10 * F + SLACK  # each one answered promptly
            await asyncio.sleep(max(0.0, (i + 1) * EVERY - (time.monotonic() - started)))
    down = answered[:DOWN_REQUESTS]
    assert set(down) == {FALLBACK}
    assert answered[-3:] == [PRIMARY] * 3  # came back
    assert sim.count("openai") <= REQUESTS + 4  # probed, never hammered (3 per call)
