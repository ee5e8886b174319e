"""The benchmark's sixteen scenarios through the gateway: ``failover serve``'s app on loopback
in front of the simulator, the official openai SDK as the client (``max_retries=0``: the
chain retries), default settings (:mod:`.scenarios`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest

from providers import Fault, SimulatedServer
from tests.providers.benchmark import scenarios as bench
from tests.providers.benchmark.scenarios import Scenario
from tests.providers.serve.conftest import gateway
from tests.timing import Stopwatch

MODELS = {bench.PRIMARY: "gpt-primary", bench.FALLBACK: "claude-fallback"}
PROMPT = [{"role": "user", "content": "Summarise the incident report"}]


@asynccontextmanager
async def client(sim: SimulatedServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with gateway({"chain": bench.chain(sim)}) as url:
        sdk = openai.AsyncOpenAI(base_url=url + "/v1", api_key="gw-key", max_retries=0)
        try:
            yield sdk
        finally:
            await sdk.close()


async def ask(sdk: openai.AsyncOpenAI, stream: bool) -> tuple[str, str, str, Any, str]:
    """One call: (handled-by header, model field(s), text, usage, finish reason)."""
    if not stream:
        raw = await sdk.chat.completions.with_raw_response.create(model="chain", messages=PROMPT)  # type: ignore[arg-type]
        done = raw.parse()
        choice = done.choices[0]
        text = choice.message.content or ""
        return (
            raw.headers.get("x-failover-handled-by", ""),
            done.model,
            text,
            done.usage,
            choice.finish_reason,
        )
    raw_stream = await sdk.chat.completions.with_raw_response.create(
        model="chain",
        messages=PROMPT,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    models, parts, usage, finish = set(), [], None, ""
    async for chunk in raw_stream.parse():
        models.add(chunk.model)
        usage = chunk.usage or usage
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    handled = raw_stream.headers.get("x-failover-handled-by", "")
    return handled, ",".join(sorted(models)), "".join(parts), usage, finish


@pytest.mark.parametrize("case", [s.param() for s in bench.SCENARIOS])
async def test_gateway_scenario(sim: SimulatedServer, case: Scenario) -> None:
    case.script(sim)
    async with client(sim) as sdk:
        watch = Stopwatch()  # the process's own seconds: not the machine's other work
        if case.answered_by is None:
            # A refusal: no retry, no other model asked, a 400 in the client's format that
            # gives the reason (in the gateway's words: upstream text never crosses).
            with pytest.raises(openai.BadRequestError) as info:
                await ask(sdk, case.stream)
            assert "content policy" in str(info.value) and sim.count("anthropic") == 0
        else:
            handled, model, text, usage, finish = await ask(sdk, case.stream)
        elapsed, wall = watch.elapsed(), watch.wall()
    if case.answered_by is not None:
        named = (case.streamed_by or case.answered_by) if case.stream else case.answered_by
        assert handled == named
        assert model == MODELS[named]  # the model that answered (item 22)
        assert text and finish == "stop"
        assert usage is not None and usage.completion_tokens > 0
    assert case.at_least <= wall, wall  # waited at least: on the wall clock
    assert elapsed < case.within + bench.SLACK, (elapsed, wall)
    assert sim.count("openai") <= case.primary_calls  # backed off, never hammered


async def test_503_primary_reports_the_fallback_model_and_usage(sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.status(503))
    sim.set_default("anthropic", Fault.ok("from the fallback", usage=(12, 5)))
    async with client(sim) as sdk:
        for stream in (False, True):
            handled, model, text, usage, _ = await ask(sdk, stream)
            assert (handled, model, text) == (
                bench.FALLBACK,
                "claude-fallback",
                "from the fallback",
            )
            # The answering model's usage: the failed 503 attempts are not billed to the client.
            assert (usage.prompt_tokens, usage.completion_tokens) == (12, 5)


async def test_primary_down_60s_then_healthy_over_20_requests(sim: SimulatedServer) -> None:
    sim.set_default("openai", Fault.status(503))
    answered: list[str] = []
    async with client(sim) as sdk:
        started = time.monotonic()
        for i in range(bench.REQUESTS):
            if i == bench.DOWN_REQUESTS:  # by count: a late request is still a "down" one
                sim.set_default("openai", Fault.ok())
            sent = Stopwatch()
            handled, *_ = await ask(sdk, stream=i % 2 == 1)
            answered.append(handled)
            assert sent.elapsed() < 10 * bench.F + bench.SLACK  # answered promptly
            await asyncio.sleep(max(0.0, (i + 1) * bench.EVERY - (time.monotonic() - started)))
    down = answered[: bench.DOWN_REQUESTS]
    assert set(down) == {bench.FALLBACK}
    assert answered[-3:] == [bench.PRIMARY] * 3  # came back
    assert sim.count("openai") <= bench.REQUESTS + 4  # probed, never hammered (3 per call)
