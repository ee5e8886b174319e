"""A reply with no price under a budget: counted at the dearest known price of its family
(``budget_unpriced="dearest"``, the default), refused (``"refuse"``) or at a given price."""

from __future__ import annotations

import pytest

from orchestrator import Budget, FallbackAgent, Response, Usage
from orchestrator.engine.capacity import Capacity
from orchestrator.errors import BudgetExceeded, FallbackError
from orchestrator.testing import FakeClock
from tests.conftest import Scripted, health_store


def unpriced(name: str, dearest: tuple[float, float] | None) -> Scripted:
    """A provider with no ``price`` that answers 1,000 input and 1,000 output tokens and no
    cost; ``dearest``: the dearest price of its family, as the vendor providers expose it."""
    provider = Scripted(name, [Response("ok", usage=Usage(1_000, 1_000))] * 10)
    provider.dearest_price = dearest  # type: ignore[attr-defined]
    return provider


async def test_by_default_an_unpriced_reply_counts_at_its_familys_dearest_price(
    clock: FakeClock,
) -> None:
    a = unpriced("a", (100.0, 400.0))  # $0.50 a reply of 1,000 + 1,000 tokens
    store = health_store(clock)
    agent = FallbackAgent([a], clock=clock, health=store, budget=Budget(usd=1.2))
    for _ in range(3):
        assert (await agent.run("x")).handled_by == "a"
    spent = {k: v for k, v in store.capacity.usage().items() if k.startswith("agent:")}
    assert [v["spent_usd"] for v in spent.values()] == [pytest.approx(1.5)]
    with pytest.raises(BudgetExceeded):  # $1.50 of $1.20: the chain stops
        await agent.run("x")
    assert a.calls == 3


async def test_refuse_skips_an_unpriced_child_and_no_family_price_is_refused(
    clock: FakeClock,
) -> None:
    a, b = unpriced("a", (1.0, 1.0)), unpriced("b", None)
    refusing = FallbackAgent([a], clock=clock, budget=Budget(usd=5), budget_unpriced="refuse")
    with pytest.raises(FallbackError) as raised:
        await refusing.run("x")
    assert [x.reason for x in raised.value.attempts] == ["budget"] and a.calls == 0
    by_default = FallbackAgent([b, a], clock=clock, budget=Budget(usd=5))
    result = await by_default.run("x")
    assert (result.handled_by, result.attempts[0].reason, b.calls) == ("a", "budget", 0)


def test_budget_unpriced_takes_dearest_refuse_or_a_price() -> None:
    assert Capacity().unpriced == "dearest"
    assert Capacity.of(None, None, "dearest").unpriced == "dearest"
    with pytest.raises(ValueError, match="'dearest'"):
        Capacity.of(None, None, "cheapest")
