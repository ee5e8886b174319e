"""Hedged runs on spans and metrics, over real loopback HTTP with the real OpenTelemetry SDK.

One CLIENT span per upstream request (counted against the simulated server),
``failover.hedge`` on the hedge's span, the loser's span ended with decision and
reason ``hedge_lost``, nothing left open with 100 hedged calls in flight.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from orchestrator import FallbackAgent
from orchestrator.errors import FirstTokenTimeout
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer
from tests.orchestrator.telemetry.conftest import Otel

KEY = "sk-test-0123456789abcdef"


def chain(sim: SimulatedServer, **kw: Any) -> FallbackAgent:
    slow = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY, price=(1.0, 2.0))
    fast = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
    return FallbackAgent([slow, fast], name="hedged", hedge_after=0.1, **kw)


def upstream(sim: SimulatedServer) -> int:
    return sim.count("openai") + sim.count("anthropic")


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_the_hedge_and_the_loser_each_have_one_span(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(5.0))
        result = await chain(sim).run("hello there")
    assert result.handled_by == "anthropic:claude-sim"
    loser = result.attempts[0]
    assert loser.reason == "hedge_lost" and loser.usage is not None
    assert loser.usage.input_tokens == 3  # "hello there": 11 characters / 4, rounded up
    assert loser.cost_usd == pytest.approx(3 * 1.0 / 1e6) == result.cost_usd
    assert "cost estimated" in (loser.note or "")
    spans = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    assert len(spans) == upstream(sim) == 2
    lost, won = (attrs(s) for s in spans)
    assert lost["failover.provider"] == "openai:gpt-sim"
    assert lost["gen_ai.request.model"] == "gpt-sim"
    assert lost["failover.decision"] == "hedge_lost" and lost["failover.reason"] == "hedge_lost"
    assert "failover.hedge" not in lost and spans[0].status.status_code == StatusCode.UNSET
    assert lost["failover.usage.estimated"] is True and lost["failover.cost_usd"] > 0
    assert won["failover.hedge"] is True and won["failover.decision"] == "success"
    assert won["gen_ai.request.model"] == "claude-sim"
    (run,) = otel.run_spans()
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in spans)
    assert not otel.open_spans.open


async def test_metrics_count_the_hedge_and_the_loser(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(5.0))
        await chain(sim).run("hello there")
    attempts = {
        (p.attributes["failover.provider"], p.attributes["failover.decision"]): p.value
        for p in otel.points("failover.attempts")
    }
    assert attempts == {("openai:gpt-sim", "hedge_lost"): 1, ("anthropic:claude-sim", "success"): 1}
    (hedges,) = otel.points("failover.fallbacks")
    assert dict(hedges.attributes) == {
        "failover.from": "openai:gpt-sim",
        "failover.to": "anthropic:claude-sim",
        "failover.reason": "hedge",
    }


async def test_100_hedged_calls_in_flight_leave_no_span_open(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(5.0))
        agent = chain(sim)
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(100)))
    assert {r.handled_by for r in results} == {"anthropic:claude-sim"}
    assert len(otel.attempt_spans()) == upstream(sim) == 200
    assert len(otel.run_spans()) == 100
    assert sum(1 for s in otel.attempt_spans() if attrs(s).get("failover.hedge")) == 100
    assert not otel.open_spans.open


async def test_a_cancelled_hedged_call_ends_every_span(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(5.0))
        sim.set_default("anthropic", Fault.first_token(5.0))
        agent = chain(sim)
        tasks = [asyncio.create_task(agent.run(f"call {i}")) for i in range(20)]
        while upstream(sim) < 40:
            await asyncio.sleep(0.02)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert len(otel.attempt_spans()) == upstream(sim) == 40
    assert not otel.open_spans.open
    for span in otel.attempt_spans():  # cut short by the caller, not lost to a hedge
        assert span.status.status_code == StatusCode.ERROR
        assert attrs(span)["error.type"] == "CancelledError"


async def test_a_provider_under_deadlines_is_described_on_its_span(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.first_token(2.0)])
        slow = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY, first_token_timeout=0.2)
        fast = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
        result = await FallbackAgent([slow, fast], max_retries=0).run("hi")
    assert isinstance(result.attempts[0].error, FirstTokenTimeout)
    spans = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    assert len(spans) == upstream(sim) == 2
    timed_out = attrs(spans[0])
    assert timed_out["gen_ai.request.model"] == "gpt-sim" and spans[0].name == "chat gpt-sim"
    assert timed_out["error.type"] == "FirstTokenTimeout"
    assert timed_out["failover.decision"] == "fallback"
