"""Streams are rescued by default (issue 17 item 20), over real loopback HTTP.

A stream cut mid-answer, stalled with its connection open, or broken by a malformed
chunk: with nothing set but the chain, the next attempt continues from the text
already delivered and the caller gets one whole answer.
"""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer

KEY = "sk-test-0123456789"
TEXT = "one two three four five six"

FAULTS = {
    "cut": Fault.cut_stream(after=2, text=TEXT, how="abort"),
    "stall": Fault.stall(2, keepalive=0.05),
    "malformed": Fault.invalid_json(),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_broken_stream_is_continued_by_default(fault: str) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", FAULTS[fault])
        sim.set_default("anthropic", Fault.ok(" and the rest"))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        secondary = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
        # Only the stall needs a short deadline here (the default, 20 s, is for real use).
        watch = {"idle_timeout": 0.5} if fault == "stall" else {}
        agent = FallbackAgent([primary, secondary], max_retries=0, **watch)  # type: ignore[arg-type]
        async with agent.stream("write") as s:
            chunks = [c async for c in s]
        text = "".join(chunks)
        delivered = text.removesuffix(" and the rest")
        assert delivered and delivered != text and s.result.text == text
        assert s.result.handled_by == secondary.name
        sent = sim.requests("anthropic")[0]["body"]["messages"]
        assert sent[-1] == {"role": "assistant", "content": delivered.rstrip()}


async def test_a_cut_stream_continues_on_a_model_that_refuses_prefill() -> None:
    """Issue 17 item 21: Claude 4.6 refuses a prefill. Its provider says so by default
    (``accepts_prefill`` False), so the rescue asks for the rest in a user turn."""
    async with SimulatedServer() as sim:
        sim.set_default("openai", FAULTS["cut"])
        sim.set_default("anthropic", Fault.no_prefill(Fault.ok(" and the rest")))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        claude = AnthropicMessages("claude-opus-4-6", base_url=sim.anthropic_url, api_key=KEY)
        assert claude.accepts_prefill is False
        agent = FallbackAgent([primary, claude], max_retries=0)
        async with agent.stream("write") as s:
            chunks = [c async for c in s]
        text = "".join(chunks)
        delivered = text.removesuffix(" and the rest")
        assert delivered != text and s.result.text == text
        sent = sim.requests("anthropic")[0]["body"]["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert sent[1]["content"] == delivered and "continue" in sent[2]["content"].lower()


async def test_a_model_wrongly_said_to_take_a_prefill_is_asked_again_by_a_user_turn() -> None:
    """A provider said to take a prefill answers 400 (a new Claude the defaults do not know):
    the same attempt asks again with a user turn, and the caller gets the whole answer."""
    async with SimulatedServer() as sim:
        sim.set_default("openai", FAULTS["cut"])
        sim.set_default("anthropic", Fault.no_prefill(Fault.ok(" and the rest")))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        claude = AnthropicMessages(
            "claude-opus-4-6", base_url=sim.anthropic_url, api_key=KEY, accepts_prefill=True
        )
        agent = FallbackAgent([primary, claude], max_retries=0)
        async with agent.stream("write") as s:
            text = "".join([c async for c in s])
        assert s.result.handled_by == claude.name and text.endswith(" and the rest")
        first, second = (r["body"]["messages"] for r in sim.requests("anthropic"))
        assert [m["role"] for m in first] == ["user", "assistant"]
        assert [m["role"] for m in second] == ["user", "assistant", "user"]


async def test_a_refused_prefill_never_masks_the_original_failure() -> None:
    """When the rescue fails too, the caller's error starts with the original mid-stream
    failure, not with the prefill 400 (which was a terminal InvalidRequest on main)."""
    async with SimulatedServer() as sim:
        sim.set_default("openai", FAULTS["cut"])
        sim.set_default("anthropic", Fault.no_prefill(Fault.server_error(503)))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        claude = AnthropicMessages(
            "claude-opus-4-6", base_url=sim.anthropic_url, api_key=KEY, accepts_prefill=True
        )
        agent = FallbackAgent([primary, claude], max_retries=0)
        with pytest.raises(FallbackError) as caught:
            async with agent.stream("write") as s:
                async for _ in s:
                    pass
        kinds = [type(a.error).__name__ for a in caught.value.attempts]
        assert kinds == ["StreamInterrupted", "ServerError"]
        message = str(caught.value)
        assert message.index("StreamInterrupted") < message.index("ServerError")


@pytest.mark.parametrize(
    ("model", "takes"),
    [
        ("claude-haiku-4-5", True),
        ("claude-opus-4-20250514", True),
        ("claude-3-5-sonnet-20241022", True),
        ("claude-opus-4-6", False),
        ("claude-sonnet-4-6-20260101", False),
        ("claude-opus-5", False),
    ],
)
def test_which_models_take_a_prefill_by_default(model: str, takes: bool) -> None:
    assert AnthropicMessages(model, api_key=KEY).accepts_prefill is takes
    assert OpenAIChat("gpt-sim", api_key=KEY).accepts_prefill is False
    assert OpenAIChat("vllm-model", api_key=KEY, accepts_prefill=True).accepts_prefill is True


async def test_many_cut_streams_in_flight_each_get_their_own_whole_answer() -> None:
    """100 concurrent streams, each cut mid-answer and continued: every caller gets its
    own delivered text plus the continuation (no prefix crosses between streams)."""
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.cut_stream(after=2, how="abort"))
        sim.set_default("anthropic", Fault.ok(" and the rest"))
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        secondary = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
        agent = FallbackAgent([primary, secondary], max_retries=0)

        async def one(i: int) -> tuple[str, str]:
            async with agent.stream(f"{i:03d} " + "x" * 30) as s:  # 2/3 of it is delivered
                text = "".join([c async for c in s])
            return text, s.result.text

        outcomes = await asyncio.gather(*(one(i) for i in range(100)))
        for i, (text, result) in enumerate(outcomes):
            delivered = text.removesuffix(" and the rest")
            assert text == result and delivered != text
            assert delivered.startswith(f"sim-openai: {i:03d} ")  # its own text
        sent = [r["body"]["messages"][-1]["content"] for r in sim.requests("anthropic")]
        expected = [t.removesuffix(" and the rest").rstrip() for t, _ in outcomes]
        assert sorted(sent) == sorted(expected)
