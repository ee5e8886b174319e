"""The attempt span's context leaves with the request: ``traceparent`` on outgoing HTTP."""

from __future__ import annotations

from orchestrator import FallbackAgent
from orchestrator.telemetry import trace_headers
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer
from tests.orchestrator.telemetry.conftest import Otel

KEY = "sk-test-0123456789abcdef"


def traceparent_of(span: object) -> str:
    ctx = span.context  # type: ignore[attr-defined]
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"


async def test_each_request_carries_its_attempt_spans_traceparent(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.ok()])
        agent = FallbackAgent(
            [
                OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY),
                AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY),
            ],
            max_retries=1,
            retry_strategy="none",
        )
        await agent.run("x")
        async with agent.stream("y") as s:  # the streaming path sends it too
            _ = [c async for c in s]
        sent = [r["headers"].get("traceparent") for r in sim.requests("openai")]
    spans = sorted(otel.attempt_spans(), key=lambda s: s.start_time or 0)
    assert sent == [traceparent_of(s) for s in spans]
    assert len(set(sent)) == 3


async def test_no_traceparent_without_an_active_span(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        provider = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        await provider.complete(__import__("orchestrator").Request("x"))
        (request,) = sim.requests("openai")
    assert "traceparent" not in request["headers"]


def test_trace_headers_returns_the_same_mapping_when_no_span_is_active() -> None:
    headers = {"authorization": "Bearer x"}
    assert trace_headers(headers) is headers
