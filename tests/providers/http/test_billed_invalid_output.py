"""A billed reply that cannot be used keeps the usage it reported (and its cost) on the
``InvalidOutput``, so the engine counts it: whole replies and streams, every vendor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator.errors import InvalidOutput
from orchestrator.types import Attempt, Usage
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_tools_wire import ROUTES, ask, provider, streamed

PRICE = (2.0, 8.0)  # USD per million input, output tokens

# A reply of the wrong shape that still says what it used (7 in, 3 out), per vendor.
BAD_SHAPE_WITH_USAGE: dict[str, dict[str, Any]] = {
    "openai": {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
    "anthropic": {"content": "not a list", "usage": {"input_tokens": 7, "output_tokens": 3}},
    "gemini": {
        "candidates": [],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3},
    },
}
MALFORMED_USAGE: dict[str, dict[str, Any]] = {
    "openai": {"choices": [], "usage": {"prompt_tokens": "n/a"}},
    "anthropic": {"content": "not a list", "usage": {"input_tokens": -1}},
    "gemini": {"candidates": [], "usageMetadata": {"promptTokenCount": 2**60}},
}


async def only_attempt(agent: FallbackAgent, *, stream: bool) -> Attempt:
    """The one attempt of a run (or a stream) of ``agent`` that must fail."""
    with pytest.raises(FallbackError) as info:
        if stream:
            async with agent.stream(ask()) as s:
                [c async for c in s]
        else:
            await agent.run(ask())
    (attempt,) = info.value.attempts
    return attempt


def _parse(p: Any, data: Any) -> Any:
    args = (None, p.payload(ask(), stream=False)[1]) if p.family == "anthropic" else ()
    return p.parsed_reply(p.parse, data, *args)


@pytest.mark.parametrize("route", ROUTES)
def test_a_reply_of_the_wrong_shape_carries_its_usage_and_cost(
    sim: SimulatedServer, route: str
) -> None:
    p = provider(route, sim, price=PRICE)
    with pytest.raises(InvalidOutput) as info:
        _parse(p, BAD_SHAPE_WITH_USAGE[route])
    assert info.value.usage == Usage(7, 3)
    assert info.value.cost_usd == pytest.approx((7 * 2.0 + 3 * 8.0) / 1_000_000)
    assert info.value.__context__ is None  # nothing of the reply chained in


@pytest.mark.parametrize("route", ROUTES)
def test_a_malformed_usage_is_not_counted(sim: SimulatedServer, route: str) -> None:
    p = provider(route, sim, price=PRICE)
    with pytest.raises(InvalidOutput) as info:
        _parse(p, MALFORMED_USAGE[route])
    assert (info.value.usage, info.value.cost_usd) == (None, None)


@pytest.mark.parametrize("route", ROUTES)
def test_without_a_price_the_usage_is_kept_and_the_cost_unknown(
    sim: SimulatedServer, route: str
) -> None:
    with pytest.raises(InvalidOutput) as info:
        _parse(provider(route, sim), BAD_SHAPE_WITH_USAGE[route])
    assert (info.value.usage, info.value.cost_usd) == (Usage(7, 3), None)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_hundred_unparsable_replies_in_flight_each_keep_their_own_usage(
    sim: SimulatedServer, route: str, stream: bool
) -> None:
    """No usage leaks between concurrent calls: each failed attempt holds its reply's."""
    n = 100
    sim.script(
        route,
        [
            Fault.ok(tool_calls=[{"name": "get_weather", "arguments": "[1]"}], usage=(i + 1, 1))
            for i in range(n)
        ],
    )
    agent = FallbackAgent([provider(route, sim, price=PRICE)], max_retries=0, schema_retries=0)

    async def one() -> InvalidOutput:
        attempt = await only_attempt(agent, stream=stream)
        assert isinstance(attempt.error, InvalidOutput)
        assert attempt.usage == attempt.error.usage and attempt.usage is not None
        assert attempt.cost_usd == attempt.error.cost_usd
        return attempt.error

    errors = await asyncio.gather(*(one() for _ in range(n)))
    assert sorted(e.usage.input_tokens for e in errors if e.usage) == list(range(1, n + 1))
    total = sum(e.cost_usd or 0.0 for e in errors)
    assert total == pytest.approx((n * (n + 1) / 2 * 2.0 + n * 8.0) / 1_000_000)


@pytest.mark.parametrize("route", ROUTES)
async def test_a_stream_broken_midway_keeps_the_usage_seen_so_far(
    sim: SimulatedServer, route: str
) -> None:
    sim.script(route, [Fault.invalid_json()])
    with pytest.raises(InvalidOutput) as info:
        await streamed(provider(route, sim, price=PRICE), ask())
    if route == "openai":  # its usage comes in the last chunk: none was seen
        assert (info.value.usage, info.value.cost_usd) == (None, None)
    else:  # Anthropic's message_start, Gemini's usageMetadata on every chunk
        assert info.value.usage is not None and info.value.usage.input_tokens > 0
        assert info.value.cost_usd is not None and info.value.cost_usd > 0


async def test_http_fallback_keeps_the_usage_of_a_reply_with_bad_tool_calls(
    sim: SimulatedServer,
) -> None:
    from providers import HTTPFallback

    bad = Fault.ok(tool_calls=[{"name": "get_weather", "arguments": "[1]"}], usage=(7, 3))
    sim.script("http", [bad])
    p = HTTPFallback(sim.http_url, supports_tools=True, price=PRICE)
    with pytest.raises(InvalidOutput) as info:
        await p.complete(ask())
    assert info.value.usage == Usage(7, 3)
    assert info.value.cost_usd == pytest.approx((7 * 2.0 + 3 * 8.0) / 1_000_000)
