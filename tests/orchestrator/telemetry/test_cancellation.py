"""Cancelled calls end their spans: the attempt with an error status, nothing left open."""

from __future__ import annotations

import asyncio
import random

import pytest
from opentelemetry.trace import StatusCode

from orchestrator import FallbackAgent
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer
from tests.orchestrator.telemetry.conftest import Otel

KEY = "sk-test-0123456789abcdef"


async def test_a_cancelled_calls_attempt_span_ends_with_an_error_status(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.hang())
        agent = FallbackAgent([OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)])
        # The caller's own timeout cancels the run mid-request (the server never answers).
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.run("x"), timeout=1.0)
        assert sim.count("openai") == 1
    (span,) = otel.attempt_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "CancelledError"
    assert span.attributes["failover.decision"] == "stop"
    (run,) = otel.run_spans()
    assert run.status.status_code == StatusCode.ERROR
    assert run.attributes["failover.outcome"] == "failed"
    assert not otel.open_spans.open


async def test_cancellation_storm_leaves_no_span_open(otel: Otel) -> None:
    rng = random.Random(7)
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.flaky(0.5, seed=3, fault=Fault.status(503)))
        sim.set_default("anthropic", Fault.delay(0.02, Fault.ok(chunks=4, interval=0.002)))
        agent = FallbackAgent(
            [
                OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY),
                AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY),
            ],
            max_retries=1,
            retry_delay=0.005,
        )

        async def one(i: int) -> None:
            if i % 2:
                await agent.run(f"call {i}")
            else:
                async with agent.stream(f"call {i}") as s:
                    async for _ in s:
                        pass

        await agent.run("warm up")  # imports and connects before the storm
        otel.exporter.clear()
        sim.reset()
        sim.set_default("openai", Fault.flaky(0.5, seed=3, fault=Fault.status(503)))
        sim.set_default("anthropic", Fault.delay(0.02, Fault.ok(chunks=4, interval=0.002)))
        tasks = [asyncio.create_task(one(i)) for i in range(100)]
        for task in tasks:
            asyncio.get_running_loop().call_later(rng.uniform(0.0, 0.3), task.cancel)
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        requests = sim.count("openai") + sim.count("anthropic")
    cancelled = sum(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert cancelled > 0
    assert not otel.open_spans.open
    assert len(otel.run_spans()) == 100
    # One attempt span per attempt: every request the server saw has one; an attempt
    # cancelled before its request left has one too, ended as cancelled.
    spans = otel.attempt_spans()
    finished = [s for s in spans if s.attributes.get("error.type") != "CancelledError"]
    assert len(finished) <= requests <= len(spans)
    for span in otel.attempt_spans():
        assert span.attributes["failover.decision"] in ("success", "retry", "fallback", "stop")
