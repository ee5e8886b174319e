"""One run span and exactly one CLIENT span per upstream request, over real loopback HTTP.

Every scenario counts the attempt spans against the simulated server's request
count, and checks the failover decision each attempt span carries.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from orchestrator import FallbackAgent, FallbackError
from orchestrator.errors import InvalidRequest
from orchestrator.health import MemoryHealthStore
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer
from tests.orchestrator.telemetry.conftest import Otel

KEY = "sk-test-0123456789abcdef"


def openai(sim: SimulatedServer, **kw: Any) -> OpenAIChat:
    return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY, price=(1.0, 2.0), **kw)


def anthropic(sim: SimulatedServer) -> AnthropicMessages:
    return AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)


def decisions(otel: Otel) -> list[tuple[str, str]]:
    spans = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    return [
        (str(s.attributes["failover.provider"]), str(s.attributes["failover.decision"]))
        for s in spans
    ]


def upstream(sim: SimulatedServer) -> int:
    return sim.count("openai") + sim.count("anthropic")


async def test_success_one_run_span_one_client_span_with_genai_attributes(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.ok("hello", usage=(12, 3))])
        agent = FallbackAgent([openai(sim), anthropic(sim)], name="support")
        result = await agent.run("the prompt text")
    assert result.handled_by == "openai:gpt-sim"
    (run,) = otel.run_spans()
    (span,) = otel.attempt_spans()
    assert len(otel.attempt_spans()) == upstream(sim) == 1
    assert run.name == "failover support" and run.kind == SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "failover.agent.name": "support",
        "failover.outcome": "success",
        "failover.handled_by": "openai:gpt-sim",
        "failover.attempts": 1,
    }
    assert span.name == "chat gpt-sim" and span.kind == SpanKind.CLIENT
    assert span.parent is not None and span.parent.span_id == run.context.span_id
    attrs = dict(span.attributes or {})
    assert attrs == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-sim",
        "gen_ai.response.model": "gpt-sim",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
        "server.address": "127.0.0.1",
        "server.port": sim.port,
        "failover.provider": "openai:gpt-sim",
        "failover.attempt.number": 1,
        "failover.decision": "success",
        "failover.cost_usd": pytest.approx((12 * 1.0 + 3 * 2.0) / 1e6),
    }
    assert span.status.status_code == StatusCode.UNSET
    everything = repr([dict(s.attributes or {}) for s in otel.spans()])
    assert (
        "the prompt text" not in everything and "hello" not in everything and KEY not in everything
    )


async def test_retry_then_success(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.rate_limited(0.01), Fault.ok()])
        agent = FallbackAgent([openai(sim)], max_retries=2, retry_strategy="none")
        await agent.run("x")
    assert len(otel.attempt_spans()) == upstream(sim) == 3
    assert decisions(otel) == [("openai:gpt-sim", d) for d in ("retry", "retry", "success")]
    first, second, third = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    assert first.attributes["error.type"] == "ServerError"
    assert first.attributes["failover.reason"] == "error"
    assert first.status.status_code == StatusCode.ERROR
    assert second.attributes["failover.reason"] == "rate_limited"
    assert second.attributes["failover.retry_after"] == pytest.approx(0.01)
    assert [s.attributes["failover.attempt.number"] for s in (first, second, third)] == [1, 2, 3]
    # A failed attempt's span ends when its request did, not after the backoff.
    assert first.end_time is not None and second.start_time is not None
    assert first.end_time <= second.start_time


async def test_fall_over(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(401)])
        agent = FallbackAgent([openai(sim), anthropic(sim)], max_retries=1)
        result = await agent.run("x")
    assert result.handled_by == "anthropic:claude-sim"
    assert len(otel.attempt_spans()) == upstream(sim) == 2
    assert decisions(otel) == [("openai:gpt-sim", "fallback"), ("anthropic:claude-sim", "success")]
    anth = [s for s in otel.attempt_spans() if s.name == "chat claude-sim"]
    assert anth[0].attributes["gen_ai.provider.name"] == "anthropic"
    (run,) = otel.run_spans()
    assert run.attributes["failover.attempts"] == 2
    assert run.attributes["failover.handled_by"] == "anthropic:claude-sim"


async def test_terminal_stop(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.bad_request()])
        agent = FallbackAgent([openai(sim), anthropic(sim)], max_retries=2)
        with pytest.raises(InvalidRequest):
            await agent.run("x")
    assert len(otel.attempt_spans()) == upstream(sim) == 1
    assert decisions(otel) == [("openai:gpt-sim", "stop")]
    (run,) = otel.run_spans()
    assert run.attributes["failover.outcome"] == "failed"
    assert run.attributes["error.type"] == "InvalidRequest"
    assert run.status.status_code == StatusCode.ERROR


async def test_all_failed(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.status(503))
        sim.set_default("anthropic", Fault.status(529))
        agent = FallbackAgent([openai(sim), anthropic(sim)], max_retries=1, retry_strategy="none")
        with pytest.raises(FallbackError):
            await agent.run("x")
    assert len(otel.attempt_spans()) == upstream(sim) == 4
    assert [d for _, d in decisions(otel)] == ["retry", "fallback", "retry", "fallback"]
    (run,) = otel.run_spans()
    assert run.attributes["failover.outcome"] == "failed"
    assert run.attributes["error.type"] == "FallbackError"
    assert run.attributes["failover.attempts"] == 4
    assert not otel.open_spans.open


async def test_streaming(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.ok("one two three", chunks=3)])
        agent = FallbackAgent([openai(sim)], max_retries=1, retry_strategy="none")
        async with agent.stream("x") as s:
            text = "".join([c async for c in s])
    assert text == "one two three"
    assert len(otel.attempt_spans()) == upstream(sim) == 2
    assert [d for _, d in decisions(otel)] == ["retry", "success"]
    (point,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert point.count == 1  # only the attempt that streamed


async def test_nested_chain_run_span_is_a_child_of_the_outer_run(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503)])
        inner = FallbackAgent([openai(sim), anthropic(sim)], name="inner", max_retries=0)
        outer = FallbackAgent([inner], name="outer")
        result = await outer.run("x")
    assert result.handled_by == "anthropic:claude-sim"
    assert len(otel.attempt_spans()) == upstream(sim) == 2
    runs = {s.name: s for s in otel.run_spans()}
    assert set(runs) == {"failover outer", "failover inner"}
    inner_span, outer_span = runs["failover inner"], runs["failover outer"]
    assert inner_span.parent is not None
    assert inner_span.parent.span_id == outer_span.context.span_id
    for span in otel.attempt_spans():
        assert span.parent is not None and span.parent.span_id == inner_span.context.span_id
    assert outer_span.attributes["failover.handled_by"] == "anthropic:claude-sim"
    assert [d for _, d in decisions(otel)] == ["fallback", "success"]


async def test_run_span_is_a_child_of_the_callers_span(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        agent = FallbackAgent([openai(sim)])
        with trace.get_tracer("app").start_as_current_span("request") as app:
            await agent.run("x")
    (run,) = otel.run_spans()
    assert run.parent is not None and run.parent.span_id == app.get_span_context().span_id
    assert run.context.trace_id == app.get_span_context().trace_id


async def test_skipped_child_is_an_event_on_the_run_span(otel: Otel) -> None:
    store = MemoryHealthStore()
    async with SimulatedServer() as sim:
        primary = openai(sim)
        store.record_failure(primary.name, retry_after=60.0)  # opens its circuit at once
        agent = FallbackAgent([primary, anthropic(sim)], health=store)
        result = await agent.run("x")
    assert result.handled_by == "anthropic:claude-sim"
    assert sim.count("openai") == 0
    assert len(otel.attempt_spans()) == upstream(sim) == 1
    (run,) = otel.run_spans()
    (event,) = run.events
    assert event.name == "failover.skipped"
    assert dict(event.attributes or {}) == {
        "failover.provider": "openai:gpt-sim",
        "failover.reason": "circuit_open",
    }


async def test_tracing_false_turns_spans_off_for_one_agent(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        await FallbackAgent([openai(sim)], tracing=False).run("x")
        assert otel.spans() == []
        await FallbackAgent([openai(sim)]).run("x")
    assert len(otel.attempt_spans()) == 1
    # Metrics still count both calls.
    points = otel.points("failover.attempts")
    assert sum(p.value for p in points) == 2


async def test_capture_content_is_opt_in(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.ok("the reply")])
        agent = FallbackAgent([openai(sim)], capture_content=True)
        await agent.run(__import__("orchestrator").Request("the question", system="be brief"))
    (span,) = otel.attempt_spans()
    import json

    sent = json.loads(str(span.attributes["gen_ai.input.messages"]))
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": "the question"}]}]
    assert span.attributes["gen_ai.system_instructions"] == "be brief"
    got = json.loads(str(span.attributes["gen_ai.output.messages"]))
    assert got[0]["role"] == "assistant" and got[0]["parts"][0]["content"] == "the reply"


async def test_a_provider_whose_description_raises_is_still_called(otel: Otel) -> None:
    class Odd:
        name = "odd"

        @property
        def model(self) -> str:
            raise RuntimeError("no model today")

        async def complete(self, request: object) -> object:
            from orchestrator import Response

            return Response("fine")

    result = await FallbackAgent([Odd()]).run("x")
    assert result.text == "fine"
    (span,) = otel.attempt_spans()
    assert span.name == "chat" and span.attributes["failover.provider"] == "odd"


async def test_generic_http_provider_names_its_server(otel: Otel) -> None:
    from providers import HTTPFallback

    async with SimulatedServer() as sim:
        provider = HTTPFallback(sim.http_url + "?token=secret-in-query", allow_insecure_http=True)
        await FallbackAgent([provider]).run("x")
    (span,) = otel.attempt_spans()
    assert span.attributes["server.address"] == "127.0.0.1"
    assert span.attributes["server.port"] == sim.port
    assert "secret-in-query" not in repr(dict(span.attributes or {}))


async def test_100_calls_in_flight_each_attempt_under_its_own_run(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.flaky(0.4, seed=11, fault=Fault.status(503)))
        agent = FallbackAgent(
            [openai(sim), anthropic(sim)], max_retries=1, retry_strategy="none", name="busy"
        )
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(100)))
        requests = upstream(sim)
        sent = [r["headers"]["traceparent"] for r in sim.requests("openai")]
    assert len(results) == 100
    runs = {s.context.span_id: s for s in otel.run_spans()}
    attempts = otel.attempt_spans()
    assert len(runs) == 100 and len(attempts) == requests
    per_run: dict[int, int] = {}
    for span in attempts:
        assert span.parent is not None and span.parent.span_id in runs
        assert span.context.trace_id == runs[span.parent.span_id].context.trace_id
        per_run[span.parent.span_id] = per_run.get(span.parent.span_id, 0) + 1
    for run_id, run in runs.items():
        assert run.attributes["failover.attempts"] == per_run[run_id]
    # Every request carried the span of its own attempt.
    openai_spans = {f"{s.context.span_id:016x}" for s in attempts if s.name == "chat gpt-sim"}
    assert {t.split("-")[2] for t in sent} == openai_spans
    assert not otel.open_spans.open


async def test_outcomes_stopped_and_best_effort(otel: Otel) -> None:
    from orchestrator import Stop
    from orchestrator.errors import ServerError
    from orchestrator.function import FunctionProvider

    def down(request: object) -> str:
        raise ServerError("down")

    children = [FunctionProvider(down, name="a"), FunctionProvider(down, name="b")]
    stopped = FallbackAgent(children, max_retries=0, before_fallback=lambda r, why: Stop("no"))
    assert (await stopped.run("x")).stopped is not None
    best = FallbackAgent(children, max_retries=0, best_effort=lambda attempts: "sorry")
    assert (await best.run("x")).best_effort
    outcomes = [s.attributes["failover.outcome"] for s in otel.run_spans()]
    assert outcomes == ["stopped", "best_effort"]


async def test_events_carry_the_attempt_spans_fields(otel: Otel) -> None:
    from orchestrator.testing import capture_events

    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.status(401)])
        sim.script("anthropic", [Fault.ok(usage=(4, 2))])
        agent = FallbackAgent([openai(sim), anthropic(sim)], max_retries=1, retry_strategy="none")
        with capture_events() as events:
            await agent.run("x")
    attempt_events = [e for e in events if e["event"].startswith("attempt_")]
    spans = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    assert len(attempt_events) == len(spans) == 3
    for event, span in zip(attempt_events, spans, strict=True):
        attrs = span.attributes or {}
        assert event["child"] == attrs["failover.provider"]
        assert event["attempt"] == attrs["failover.attempt.number"]
        assert event["decision"] == attrs["failover.decision"]
        assert event.get("reason") == attrs.get("failover.reason")
        assert event.get("error_type") == attrs.get("error.type")
        assert event.get("input_tokens") == attrs.get("gen_ai.usage.input_tokens")
        assert event.get("output_tokens") == attrs.get("gen_ai.usage.output_tokens")
        assert event.get("cost_usd") == attrs.get("failover.cost_usd")


async def test_prompt_cache_tokens_reach_the_span_and_the_event(otel: Otel) -> None:
    # Usage counted cache reads and writes (and billed them at cache rates), but no span,
    # event or --json showed them: a cost nobody could trace to the cache.
    from orchestrator.testing import capture_events

    async with SimulatedServer() as sim:
        sim.script("anthropic", [Fault.ok(usage=(1000, 5, 600, 200))])
        agent = FallbackAgent([anthropic(sim)], max_retries=0)
        with capture_events() as events:
            result = await agent.run("x")
    assert result.usage is not None and result.usage.cache_read_tokens == 600
    (event,) = [e for e in events if e["event"] == "attempt_succeeded"]
    (span,) = otel.attempt_spans()
    attrs = span.attributes or {}
    assert (event["cache_read_tokens"], event["cache_write_tokens"]) == (600, 200)
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 600
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 200
    assert event["input_tokens"] == attrs["gen_ai.usage.input_tokens"] == 1000


async def test_no_cache_tokens_no_cache_fields(otel: Otel) -> None:
    from orchestrator.testing import capture_events

    async with SimulatedServer() as sim:
        sim.script("anthropic", [Fault.ok(usage=(10, 5))])
        with capture_events() as events:
            await FallbackAgent([anthropic(sim)], max_retries=0).run("x")
    (event,) = [e for e in events if e["event"] == "attempt_succeeded"]
    attrs = otel.attempt_spans()[0].attributes or {}
    assert "cache_read_tokens" not in event and "cache_write_tokens" not in event
    assert not any("cache" in key for key in attrs)
