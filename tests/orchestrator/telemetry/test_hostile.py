"""What a hostile server sends never lands unbounded on a span (real SDK, loopback HTTP)."""

from __future__ import annotations

from orchestrator import FallbackAgent
from providers import Fault, OpenAIChat, SimulatedServer
from tests.orchestrator.telemetry.conftest import Otel

KEY = "sk-test-0123456789abcdef"


def reply(model: str) -> dict[str, object]:
    message = {"role": "assistant", "content": "hi"}
    return {
        "id": "x",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


async def test_a_hostile_response_model_is_bounded_and_escaped_on_the_span(otel: Otel) -> None:
    hostile = "m" * 200_000 + "\x1b]0;owned\x07\u202e"
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(200, body=reply(hostile))] * 100)
        provider = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        agent = FallbackAgent([provider])
        for _ in range(100):
            assert (await agent.run("hi")).text == "hi"
    spans = otel.attempt_spans()
    assert len(spans) == 100
    for span in spans:
        model = str((span.attributes or {})["gen_ai.response.model"])
        assert model.startswith("mmmm") and len(model) <= 256
        assert not any(ord(c) < 32 or c == "\u202e" for c in model)


async def test_a_plain_response_model_is_kept_as_sent(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(200, body=reply("gpt-4o-2024-08-06"))])
        provider = OpenAIChat("gpt-4o", base_url=sim.openai_url, api_key=KEY)
        await FallbackAgent([provider]).run("hi")
    (span,) = otel.attempt_spans()
    assert (span.attributes or {})["gen_ai.response.model"] == "gpt-4o-2024-08-06"


async def test_tool_runs_one_attempt_span_per_upstream_request(otel: Otel) -> None:
    """Bad arguments and arguments not an object handed over; a provider without tools skipped."""
    from orchestrator import Request, Tool
    from providers import AnthropicMessages, GeminiGenerate, HTTPFallback

    tool = Tool("f", "", {"type": "object", "properties": {"n": {"type": "integer"}}})
    bad = Fault.ok(tool_calls=[{"name": "f", "arguments": {"n": "three"}}])
    good = Fault.ok(tool_calls=[{"name": "f", "arguments": {"n": 3}}])
    async with SimulatedServer() as sim:
        sim.set_default("openai", bad)
        sim.set_default("anthropic", Fault.ok(tool_calls=[{"name": "f", "arguments": "[1]"}]))
        sim.set_default("gemini", good)
        chain = [
            OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY),
            HTTPFallback(sim.openai_url, name="plain"),
            AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY),
            GeminiGenerate("gemini-2.5-flash", base_url=sim.gemini_url, api_key=KEY),
        ]
        agent = FallbackAgent(chain, first_token_timeout=5.0, max_retries=0)
        for stream in (False, True):
            otel.exporter.clear()
            before = sum(sim.count(r) for r in ("openai", "anthropic", "gemini"))
            request = Request("count", tools=[tool])
            if stream:
                async with agent.stream(request) as s:
                    [c async for c in s]
                    result = s.result
            else:
                result = await agent.run(request)
            assert result.tool_calls[0].arguments == {"n": 3}
            sent = sum(sim.count(r) for r in ("openai", "anthropic", "gemini")) - before
            assert len(otel.attempt_spans()) == sent >= 3
            (run,) = otel.run_spans()
            skips = [e for e in run.events if e.attributes and e.attributes.get("failover.reason")]
            assert [e.attributes["failover.reason"] for e in skips if e.attributes] == [
                "unsupported"
            ]
            assert otel.open_spans.open == {}
