"""Deadlines inside a call and hedged requests over real loopback HTTP (the simulated server).

Bounds are generous (the machine is shared); bench/deadlines.py and bench/hedging.py
measure the figures.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator.errors import FirstTokenTimeout, StreamStalled
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer
from providers.simulator.script import parse_script


def primary(sim: SimulatedServer, **kw: object) -> OpenAIChat:
    return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="sk-test-0123456789", **kw)  # type: ignore[arg-type]


def secondary(sim: SimulatedServer) -> AnthropicMessages:
    return AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key="sk-ant-test-0123")


async def no_task_left(before: set[asyncio.Task[object]]) -> None:
    """Wait briefly until only the tasks in ``before`` remain.

    A vendor stream that ``break`` s out of its event generator at the end marker
    leaves that generator to asyncio's finalizer, which closes it in a task of
    its own a loop turn later: give those a moment, then nothing may be left.
    """
    for _ in range(100):
        if not asyncio.all_tasks() - before:
            return
        await asyncio.sleep(0.01)
    assert asyncio.all_tasks() - before == set()


async def settled(sim: SimulatedServer) -> None:
    for _ in range(100):
        if sim.in_flight == 0:
            return
        await asyncio.sleep(0.01)
    assert sim.in_flight == 0, "a request the client gave up on is still open"


async def test_no_first_token_moves_on_after_first_token_timeout_not_timeout() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(60.0, keepalive=0.05))
        async with FallbackAgent(
            [primary(sim), secondary(sim)],
            first_token_timeout=0.5,
            timeout=60,
            max_retries=0,
        ) as agent:
            await agent.run("warm up")  # import and connect outside the measurement
            took = []
            for _ in range(10):
                t0 = time.perf_counter()
                result = await agent.run("hello")
                took.append(time.perf_counter() - t0)
                assert result.handled_by == "anthropic:claude-sim"
                assert isinstance(result.attempts[0].error, FirstTokenTimeout)
        assert statistics.median(took) < 1.0 and max(took) < 2.5, took
        await settled(sim)


async def test_a_hundred_calls_in_flight_each_leave_the_silent_primary_and_leak_nothing() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(60.0, keepalive=0.05))
        # The deadline on the silent primary only: the secondary's 100 first tokens at once
        # must not race a 0.5 s deadline on a loaded machine (failed 2 of 3 full runs so).
        async with FallbackAgent(
            [primary(sim, first_token_timeout=0.5), secondary(sim)], max_retries=0
        ) as agent:
            await agent.run("warm up")
            before = asyncio.all_tasks()
            t0 = time.perf_counter()
            results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(100)))
            took = time.perf_counter() - t0
            assert {r.handled_by for r in results} == {"anthropic:claude-sim"}
            assert all(isinstance(r.attempts[0].error, FirstTokenTimeout) for r in results)
            assert took < 5.0, took  # 0.5 s each, all at once; generous on a loaded machine
            await settled(sim)
            await no_task_left(before)


@pytest.mark.parametrize("keepalive", [0.0, 0.05])
async def test_a_stall_after_three_chunks_is_seen_at_idle_timeout(keepalive: float) -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.stall(3, keepalive=keepalive))
        async with FallbackAgent(
            [primary(sim), secondary(sim)], idle_timeout=0.3, max_retries=0
        ) as agent:
            await agent.run("warm up")
            result = await agent.run("hello")
        first = result.attempts[0]
        assert isinstance(first.error, StreamStalled) and "after 3 chunks" in str(first.error)
        assert 0.3 <= first.duration < 1.5
        assert result.handled_by == "anthropic:claude-sim"
        await settled(sim)


async def test_keep_alive_comments_do_not_count_as_a_first_token() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(60.0, keepalive=0.02))
        agent = FallbackAgent([primary(sim, first_token_timeout=0.3)], max_retries=0)
        try:
            await agent.run("hello")
        except FallbackError as e:
            assert isinstance(e.attempts[0].error, FirstTokenTimeout)
        else:
            raise AssertionError("keep-alives were taken for content")
        await settled(sim)


async def test_a_slow_first_token_that_arrives_in_time_is_the_answer() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(0.1, then=Fault.ok("late but fine")))
        agent = FallbackAgent([primary(sim), secondary(sim)], first_token_timeout=2.0)
        result = await agent.run("hello")
        assert result.text == "late but fine" and len(result.attempts) == 1


async def test_a_hundred_hedged_calls_in_flight_leave_no_task_and_no_open_request() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.latency(0.02, 30.0, rate=0.3, seed=3))
        async with FallbackAgent(
            [primary(sim), secondary(sim)], hedge_after=0.3, max_retries=0
        ) as agent:
            await agent.run("warm up")
            sim.reset()
            sim.set_default("openai", Fault.latency(0.02, 30.0, rate=0.3, seed=3))
            before = asyncio.all_tasks()
            results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(100)))
            lost = [a for r in results for a in r.attempts if a.reason == "hedge_lost"]
            # Each hedge leaves one loser (a hedge cancelled before its request left is
            # recorded too: the count on the wire can only be lower).
            assert sim.count("anthropic") <= len(lost) and len(lost) > 10
            assert all(len(r.attempts) in (1, 2) and r.attempts[-1].ok for r in results)
            await settled(sim)
            await no_task_left(before)


async def test_hedged_streams_deliver_one_reply() -> None:
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.first_token(30.0, then=Fault.ok("never")))
        sim.set_default("anthropic", Fault.ok("from the hedge", chunks=3))
        agent = FallbackAgent([primary(sim), secondary(sim)], hedge_after=0.2)
        async with agent.stream("hello") as s:
            text = "".join([c async for c in s])
        assert text == "from the hedge" and s.result.attempts[0].reason == "hedge_lost"
        await settled(sim)


def test_the_latency_faults_are_scriptable() -> None:
    scripts, defaults = parse_script(
        {
            "openai": [{"first_token": 0.5, "keepalive": 0.1}, {"stall": 3, "keepalive": 1}],
            "defaults": {"anthropic": {"latency": {"fast": 0.02, "slow": 2, "rate": 0.05}}},
        }
    )
    first = scripts["openai"][0]
    assert (first.kind, first.seconds, first.interval) == ("first_token", 0.5, 0.1)
    stall = scripts["openai"][1]
    assert (stall.kind, stall.after, stall.how, stall.interval) == ("cut_stream", 3, "hang", 1)
    draws = [defaults["anthropic"].pick().seconds for _ in range(2000)]
    assert set(draws) == {0.02, 2} and 50 <= draws.count(2) <= 150


def test_vendor_deadlines_are_validated_with_the_one_seconds_rule() -> None:
    with pytest.raises(ValueError, match=r"OpenAIChat\.idle_timeout=-1"):
        OpenAIChat(
            "m", base_url="http://127.0.0.1:9", api_key="sk-test-0123456789", idle_timeout=-1
        )
    p = AnthropicMessages("m", api_key="sk-ant-test-0123", first_token_timeout=2)
    assert (p.first_token_timeout, p.idle_timeout) == (2.0, None)
