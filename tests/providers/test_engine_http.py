"""The engine over real loopback HTTP: deadlines, cancellation and streams leak nothing."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator import FallbackAgent, FallbackError, RetryPolicy
from orchestrator.errors import ProviderTimeout, StreamInterrupted
from providers import AnthropicMessages, Fault, FunctionProvider, OpenAIChat, SimulatedServer


def openai(sim: SimulatedServer) -> OpenAIChat:
    return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="sk-test-0123456789")


async def test_attempt_timeouts_close_their_connections() -> None:
    async with SimulatedServer() as sim:
        agent = FallbackAgent(
            [openai(sim), FunctionProvider(lambda r: "backup", name="backup")],
            attempt_timeout=0.3,  # long enough for a request to reach the server on a loaded machine
            # Timeouts retried at once, every run (not last, nor only probed once the primary
            # is known down: the defaults): two hung requests per run, each must be closed.
            policy=RetryPolicy(
                max_retries=1, strategy="none", retry_timeouts_last=False, probe_when_down=False
            ),
            hedge_after=None,  # the attempt timeout cuts the hung request, not a hedge
        )
        # Warm up first: the first call imports the HTTP client and connects, which on a
        # loaded machine can take most of the budget before the request is sent.
        assert (await agent.run("warm")).handled_by == "openai:gpt-sim"
        sim.reset()
        sim.set_default("openai", Fault.hang())
        for _ in range(3):
            result = await agent.run("x")
            assert result.handled_by == "backup"
            assert all(isinstance(a.error, ProviderTimeout) for a in result.attempts[:2])
        assert sim.count("openai") == 6
        for _ in range(50):
            if sim.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        assert sim.in_flight == 0  # every hung request saw its client go away


async def test_cancelling_a_run_mid_request_leaves_no_request_or_task() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.hang())
        agent = FallbackAgent([openai(sim)])
        before = asyncio.all_tasks()
        task = asyncio.create_task(agent.run("x"))
        while sim.count("openai") == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(50):
            if sim.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        assert sim.in_flight == 0
        assert asyncio.all_tasks() == before


async def test_run_deadline_over_http_raises_with_the_timed_out_attempt() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.delay(5.0))
        # hedge_after=None: the run's deadline alone (a hedge would start "second" at 1/3 of it)
        agent = FallbackAgent(
            [openai(sim), openai_named(sim, "second")], timeout=0.2, hedge_after=None
        )
        with pytest.raises(FallbackError) as info:
            await agent.run("x")
        assert [a.reason for a in info.value.attempts] == ["deadline"]
        assert sim.count("openai") == 1


def openai_named(sim: SimulatedServer, name: str) -> OpenAIChat:
    return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="sk-test-0123456789", name=name)


async def test_cut_stream_continues_on_another_vendor_without_repeating_text() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.cut_stream(after=2, text="one two three four"))
        sim.set_default("anthropic", Fault.ok(text="the rest"))
        agent = FallbackAgent(
            [
                openai(sim),
                AnthropicMessages(
                    "claude-sim", base_url=sim.anthropic_url, api_key="sk-ant-test-0123456789"
                ),
            ],
            max_retries=0,
            mid_stream="continue",
        )
        async with agent.stream("write") as s:
            chunks = [c async for c in s]
        text = "".join(chunks)
        assert text.endswith("the rest") and s.result.text == text
        delivered = text[: -len("the rest")]
        assert delivered and "one two three four".startswith(delivered)
        assert s.result.handled_by == "anthropic:claude-sim"
        sent = sim.requests("anthropic")[0]["body"]["messages"]
        assert sent[-1]["role"] == "assistant"
        content = sent[-1]["content"]
        prefix = content if isinstance(content, str) else "".join(b["text"] for b in content)
        assert prefix == delivered.rstrip()  # Anthropic refuses a prefill ending in whitespace
        assert isinstance(s.attempts[0].error, StreamInterrupted)


async def test_cut_stream_raises_with_mid_stream_raise() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.cut_stream(after=2))
        agent = FallbackAgent(
            [openai(sim), FunctionProvider(lambda r: "never", name="b")], mid_stream="raise"
        )
        with pytest.raises(StreamInterrupted):
            async with agent.stream("write") as s:
                async for _ in s:
                    pass
        assert sim.count("openai") == 1


def test_building_a_provider_loads_the_http_library_so_first_calls_keep_their_deadline() -> None:
    import subprocess
    import sys

    code = (
        "import sys, providers\n"
        "assert 'aiohttp' not in sys.modules, 'import providers must stay cheap'\n"
        "providers.OpenAIChat('m', api_key='sk-test-0123456789')\n"
        "assert 'aiohttp' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_a_lazily_hedged_first_call_over_http_races_only_when_slow() -> None:
    # The first child runs in the caller's task; a loop timer at hedge_after starts the race
    # only for the calls still without content then (orchestrator.engine.inline).
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.latency(fast=0.0, slow=1.5, rate=0.4, seed=3))
        sim.set_default("anthropic", Fault.ok(text="hedge"))
        anthropic = AnthropicMessages(
            "claude-sim", base_url=sim.anthropic_url, api_key="sk-ant-test-0123456789"
        )
        agent = FallbackAgent([openai(sim), anthropic], hedge_after=0.5, max_retries=0)
        assert (await agent.run("warm")).attempts  # imports and connects first
        before = asyncio.all_tasks()
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(16)))
        shapes = {(r.handled_by, tuple(a.reason for a in r.attempts)) for r in results}
        assert shapes == {
            ("openai:gpt-sim", (None,)),
            ("anthropic:claude-sim", ("hedge_lost", None)),
        }
        me = asyncio.current_task()
        assert me is not None and me.cancelling() == 0
        for _ in range(100):
            if sim.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        assert sim.in_flight == 0  # every cut first call closed its connection
        left = [t for t in asyncio.all_tasks() - before if "simulated" not in repr(t.get_coro())]
        assert left == []
