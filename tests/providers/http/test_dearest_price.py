"""A vendor provider exposes the dearest known price of its family (``dearest_price``): what
a budget counts its replies at when it has no price of its own (``budget_unpriced``)."""

from __future__ import annotations

import pytest

from orchestrator import Budget, FallbackAgent
from orchestrator.errors import BudgetExceeded, FallbackError
from orchestrator.health import MemoryHealthStore
from providers import AnthropicMessages, Fault, GeminiGenerate, OpenAIChat, SimulatedServer
from providers.http.catalogue import lookup

KEY = "sk-sim-0123456789"


def test_the_dearest_price_bounds_every_listed_model_of_the_family() -> None:
    openai = OpenAIChat("gpt-sim", base_url="https://example.test/v1", api_key=KEY)
    assert openai.price is None and openai.dearest_price is not None
    for model in ("gpt-4o", "gpt-4o-mini", "o1"):
        entry = lookup("openai", model)
        assert entry is not None and entry.rates is not None
        assert openai.dearest_price[0] >= entry.rates.input
        assert openai.dearest_price[1] >= entry.rates.output
    claude = AnthropicMessages("claude-sim", base_url="https://example.test", api_key=KEY)
    opus = lookup("anthropic", "claude-3-opus")
    assert claude.dearest_price is not None and opus is not None and opus.rates is not None
    assert claude.dearest_price == (opus.rates.input, opus.rates.output)  # Opus: the dearest
    gemini = GeminiGenerate("gemini-sim", base_url="https://example.test", api_key=KEY)
    assert gemini.dearest_price is not None
    assert gemini.dearest_price[1] < claude.dearest_price[1]  # Google's list of Claude: not its


async def test_an_unpriced_provider_spends_a_budget_at_its_familys_dearest_price(
    sim: SimulatedServer,
) -> None:
    sim.set_default("openai", Fault.ok("hi", usage=(1_000, 1_000)))
    provider = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
    assert provider.price is None and provider.dearest_price is not None
    per_call = (1_000 * provider.dearest_price[0] + 1_000 * provider.dearest_price[1]) / 1e6
    agent = FallbackAgent(
        [provider], max_retries=0, health=MemoryHealthStore(), budget=Budget(usd=per_call * 1.5)
    )
    async with agent:
        assert (await agent.run("hi")).handled_by == provider.name
        assert (await agent.run("hi")).handled_by == provider.name  # $1.0 of $1.5 spent
        with pytest.raises(BudgetExceeded):  # $2.0 of $1.5
            await agent.run("hi")
        refusing = FallbackAgent([provider], budget=Budget(usd=100), budget_unpriced="refuse")
        with pytest.raises(FallbackError):
            await refusing.run("hi")
    assert sim.count("openai") == 2
