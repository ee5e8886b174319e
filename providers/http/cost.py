"""What a reply cost: prices validated once, the cost of a usage, and billing a reply
that could not be used (its tokens were still paid for)."""

from __future__ import annotations

from orchestrator.errors import InvalidOutput
from orchestrator.types import Usage
from providers.http.catalogue import Rates

__all__ = ["bill", "cost_of", "validate_price"]


def validate_price(price: tuple[float, float] | None, *, field: str) -> tuple[float, float] | None:
    """``(usd_per_1M_input, usd_per_1M_output)``, both >= 0, or None."""
    if price is None:
        return None
    try:
        pin, pout = price
        ok = pin >= 0 and pout >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(
            f"{field}={price!r} must be (usd_per_1M_input, usd_per_1M_output), both >= 0"
        )
    return (float(pin), float(pout))


def cost_of(usage: Usage | None, price: tuple[float, float] | Rates | None) -> float | None:
    """USD for ``usage`` at ``price`` per million tokens (None when either is unknown)."""
    if usage is None or price is None:
        return None
    if isinstance(price, Rates):
        return price.cost(usage)
    return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000


def bill(
    error: InvalidOutput, usage: Usage | None, price: tuple[float, float] | Rates | None
) -> None:
    """Give ``error`` ``usage`` and its cost at ``price`` unless it has a usage already:
    a reply that cannot be used is still billed. Call it where an ``InvalidOutput``
    passes with the reply's usage known (a stream: the usage so far), then re-raise it."""
    if error.usage is None and usage is not None:
        error.usage, error.cost_usd = usage, cost_of(usage, price)
