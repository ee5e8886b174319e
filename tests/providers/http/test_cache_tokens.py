"""Prompt-cache tokens: every vendor's reply says how many input tokens its cache read and
wrote, each in its own fields; they reach ``Usage`` and are priced at the catalogue's cache
rates (else as input), over loopback HTTP to the simulator, whole and streamed."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.types import Request, Usage
from providers.anthropic import AnthropicMessages
from providers.azure import AzureOpenAI
from providers.gemini.client import GeminiGenerate
from providers.http.catalogue import Rates
from providers.http.usage import ANTHROPIC, GEMINI, OPENAI, usage_of
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import VENDORS, VERTEX, bedrock, call, make

#: 1,000 input tokens, 600 of them read from the cache and 200 written to it; 50 output.
SCRIPTED = (1000, 50, 600, 200)
#: The vendors whose wire has no cache writes (OpenAI and Google cache by themselves).
READS_ONLY = {"openai", "azure", "gemini", "vertex_gemini"}


def priced(route: str, sim: SimulatedServer) -> Any:
    """A provider of a catalogued model on ``route``, looked up although the host is ours."""
    kw: dict[str, Any] = {"catalogue": True}
    if route == "openai":
        return OpenAIChat("gpt-4o-mini", base_url=sim.openai_url, api_key="sk-test", **kw)
    if route == "azure":
        url = sim.azure_url
        return AzureOpenAI(deployment="gpt-4o-mini", endpoint=url, api_key="k", **kw)
    if route == "anthropic":
        return AnthropicMessages("claude-haiku-4-5", base_url=sim.anthropic_url, api_key="k", **kw)
    if route == "gemini":
        return GeminiGenerate("gemini-2.5-flash", base_url=sim.gemini_url, api_key="k", **kw)
    if route == "bedrock":
        provider = bedrock(sim.bedrock_url, **kw)
        assert provider.rates is None  # the simulator's model id is nobody's: price it here
        provider.rates = Rates(3.0, 15.0, cache_read=0.3, cache_write=3.75)
        return provider
    model = "claude-sonnet-4-6" if route == "vertex_anthropic" else "gemini-2.5-flash"
    where = {"project": "sim-project", "location": "us-east5", "base_url": sim.vertex_url}
    return VERTEX[route](model, access_token=sim.vertex_token, **where, **kw)


@pytest.mark.parametrize("route", VENDORS)
@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_cache_reads_and_writes_reach_usage_and_their_price(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.ok("cached", usage=SCRIPTED)])
    provider = priced(route, sim)
    _, response = await call(provider, mode, Request("hello"))
    write = 0 if route in READS_ONLY else 200
    assert response.usage == Usage(1000, 50, 600, write)
    rates = provider.rates
    assert rates is not None and rates.cache_read is not None
    cache_write = rates.input if rates.cache_write is None else rates.cache_write
    expected = (400 - write) * rates.input + 600 * rates.cache_read
    expected += write * cache_write + 50 * rates.output
    assert response.cost_usd == pytest.approx(expected / 1e6)
    as_input = (1000 * rates.input + 50 * rates.output) / 1e6
    assert response.cost_usd is not None and response.cost_usd < as_input


@pytest.mark.parametrize("route", ["openai", "anthropic", "bedrock"])
async def test_a_price_without_cache_rates_bills_the_cache_as_input(
    sim: SimulatedServer, route: str
) -> None:
    sim.script(route, [Fault.ok("cached", usage=SCRIPTED)])
    provider = make(route, sim, price=(1.0, 4.0))
    _, response = await call(provider, "complete", Request("hello"))
    assert response.usage is not None and response.usage.input_tokens == 1000
    assert response.cost_usd == pytest.approx((1000 * 1.0 + 50 * 4.0) / 1e6)


def test_rates_bill_each_kind_of_input_at_its_own_rate_and_tier() -> None:
    usage = Usage(1000, 10, 600, 300)
    assert Rates(2.0, 8.0).cost(usage) == pytest.approx((1000 * 2 + 10 * 8) / 1e6)
    both = Rates(2.0, 8.0, cache_read=0.2, cache_write=2.5)
    assert both.cost(usage) == pytest.approx((100 * 2 + 600 * 0.2 + 300 * 2.5 + 10 * 8) / 1e6)
    tiered = Rates(2.0, 8.0, ((500, 4.0),), (), 0.2, ((500, 0.4),))
    assert tiered.cost(usage) == pytest.approx((400 * 4 + 600 * 0.4 + 10 * 8) / 1e6)
    assert Usage(3, 4, 1, 1) + Usage(5, 6, 2, 0) == Usage(8, 10, 3, 1)


@pytest.mark.parametrize(
    ("fields", "reported", "usage"),
    [
        (
            OPENAI,
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}},
            (10, 0, 4, 0),
        ),
        (OPENAI, {"prompt_tokens": 10, "prompt_tokens_details": None}, (10, 0, 0, 0)),
        (ANTHROPIC, {"input_tokens": 1, "cache_read_input_tokens": 5}, (6, 0, 5, 0)),
        (GEMINI, {"promptTokenCount": 3, "cachedContentTokenCount": 9}, (3, 0, 3, 0)),
    ],
)
def test_a_hostile_or_partial_usage_never_reads_more_cached_than_input(
    fields: Any, reported: dict[str, Any], usage: tuple[int, ...]
) -> None:
    assert usage_of(reported, fields) == Usage(*usage)
    with pytest.raises(ValueError, match="out of range"):
        usage_of({**reported, fields.input: -1}, fields)
