"""The order strategies of a FallbackAgent (``order=``): who goes first, and who follows.

Each strategy is a small object bound to one agent's children, with one method,
``rank(members, choice)``, returning every child once: a strategy chooses who
goes first, never who is left out, so failover still reaches every child.

- ``priority``: the chain's own order (the default; the engine does not even ask).
- ``weighted``: the first child drawn by weight; the others follow in chain order.
- ``least_busy``: fewest calls in flight first (shared through the health store).
- ``latency``: lowest recent latency first (a decayed average per child); a child
  not sampled for ``explore_after`` seconds goes first once, so a region that
  recovered is noticed.
- ``cost``: cheapest first by catalogue price for this request (providers with a
  ``rates`` object with ``cost(usage)``, or a ``price`` of USD per million input and
  output tokens); unpriced children last.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from orchestrator.routing.state import FORGET_AFTER
from orchestrator.tokens import input_tokens_estimate
from orchestrator.types import Request
from orchestrator.usage import Usage

if TYPE_CHECKING:
    from orchestrator.engine.serving import Member
    from orchestrator.routing.state import RoutingState

__all__ = [
    "ORDERS",
    "Choice",
    "Cost",
    "LatencyFirst",
    "LeastBusy",
    "OrderName",
    "Strategy",
    "Weighted",
    "strategy_for",
]

OrderName = Literal["priority", "weighted", "least_busy", "latency", "cost"]
ORDERS: tuple[str, ...] = ("priority", "weighted", "least_busy", "latency", "cost")
#: ``latency``: a child with no sample for this long goes first once (seconds); its figure
#: is forgotten by then, so the exploring call's sample is its new figure.
EXPLORE_AFTER = FORGET_AFTER
_GOLDEN = (5**0.5 - 1) / 2
#: ``cost``: output tokens assumed for a request without ``max_tokens``.
OUTPUT_GUESS = 512


@dataclass(slots=True)
class Choice:
    """What a strategy may look at for one run: the request, the routing state, the
    randomness (a key's hash for a split, else the agent's seeded ``rng``), the time,
    and whether this is only an explanation (``peek``: change nothing)."""

    request: Request
    state: RoutingState
    rng: random.Random
    now: float
    peek: bool
    draw: float | None = None  # a key's hash in [0, 1): the same key, the same draw


class Strategy(Protocol):
    """One order strategy bound to an agent's children."""

    name: str
    #: What the engine must tell the routing state: calls in flight, latency samples.
    counts: bool
    times: bool

    def rank(self, members: Sequence[Member], choice: Choice) -> Sequence[Member]: ...


class Weighted:
    """The first child drawn by weight (``weights`` by child name, or positional for a
    split); the others follow in chain order.

    Without a key the draws are a low-discrepancy sequence (golden-ratio steps from
    a start drawn from the agent's ``rng``): every window of calls lands within a
    fraction of a point of the weights, not only their average over many.
    """

    name = "weighted"
    counts = times = False
    __slots__ = ("cumulative", "start", "step", "total")

    def __init__(self, weights: Sequence[float]) -> None:
        running, self.cumulative = 0.0, []
        for w in weights:
            running += w
            self.cumulative.append(running)
        self.total = running
        self.start: float | None = None  # drawn from the agent's rng on first use
        self.step = 0

    def first(self, choice: Choice) -> int:
        """The index of the child going first for this ``choice``."""
        draw = choice.draw
        if draw is None:
            start = choice.rng.random() if self.start is None else self.start
            draw = (start + self.step * _GOLDEN) % 1.0
            if not choice.peek:  # an explanation shows the next draw without taking it
                self.start, self.step = start, self.step + 1
        at = bisect.bisect_right(self.cumulative, draw * self.total)
        return min(at, len(self.cumulative) - 1)

    def rank(self, members: Sequence[Member], choice: Choice) -> Sequence[Member]:
        i = self.first(choice)
        return (members[i], *members[:i], *members[i + 1 :]) if i else members


class LeastBusy:
    """Fewest calls in flight first; ties keep chain order."""

    name = "least_busy"
    counts, times = True, False
    __slots__ = ()

    def rank(self, members: Sequence[Member], choice: Choice) -> Sequence[Member]:
        busy = choice.state.in_flight
        return sorted(members, key=lambda m: busy(m.name))


class LatencyFirst:
    """Lowest decayed average latency first; a child unsampled for ``explore_after``
    seconds goes first once (claimed, so one run explores it, not every run at once)."""

    name = "latency"
    counts, times = False, True
    __slots__ = ("explore_after",)

    def __init__(self, explore_after: float = EXPLORE_AFTER) -> None:
        self.explore_after = explore_after

    def rank(self, members: Sequence[Member], choice: Choice) -> Sequence[Member]:
        state, horizon = choice.state, choice.now - self.explore_after
        scored: list[tuple[float, int, Member]] = []
        stalest: tuple[float, int] | None = None
        for i, m in enumerate(members):
            known = state.latency(m.name)
            at = -math.inf if known is None else known[1]
            if at <= horizon and (stalest is None or at < stalest[0]):
                stalest = (at, i)
            scored.append((math.inf if known is None else known[0], i, m))
        scored.sort(key=lambda s: s[:2])
        ranked = [m for _, _, m in scored]
        if stalest is not None and len(members) > 1:
            explore = members[stalest[1]]
            if not choice.peek:
                state.explored(explore.name)
            ranked.remove(explore)
            ranked.insert(0, explore)
        return ranked


class Cost:
    """Cheapest first by catalogue price for this request; unpriced children last."""

    name = "cost"
    counts = times = False
    __slots__ = ()

    def rank(self, members: Sequence[Member], choice: Choice) -> Sequence[Member]:
        request = choice.request
        usage = Usage(input_tokens_estimate(request), request.max_tokens or OUTPUT_GUESS)
        return sorted(members, key=lambda m: price_of(m, usage))


def price_of(member: Any, usage: Usage, depth: int = 0) -> float:
    """USD ``member`` would charge for ``usage`` (a nested chain: its cheapest child);
    infinite when unknown."""
    agent = getattr(member, "agent", None)
    if agent is not None:
        if depth > 8:  # chains nest a few levels; bounded all the same
            return math.inf
        return min((price_of(m, usage, depth + 1) for m in agent.members), default=math.inf)
    provider = getattr(member, "provider", member)
    cost = getattr(getattr(provider, "rates", None), "cost", None)
    if callable(cost):
        return float(cost(usage))
    price = getattr(provider, "price", None)
    if isinstance(price, tuple) and len(price) == 2:
        return float(usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1e6
    return math.inf


def strategy_for(
    order: str, names: Sequence[str], weights: Mapping[str, float] | None
) -> Strategy | None:
    """The strategy ``order=`` names for children ``names`` (None for ``priority``);
    ``ValueError`` naming the fix for an unknown order or bad weights."""
    if order not in ORDERS:
        raise ValueError(f"order: {order!r} is not one of {', '.join(ORDERS)}")
    if weights is not None and order != "weighted":
        raise ValueError(f"weights: given with order={order!r}; weights need order='weighted'")
    if order == "weighted":
        return Weighted(check_weights(weights, names, "weights"))
    if order == "least_busy":
        return LeastBusy()
    if order == "latency":
        return LatencyFirst()
    return Cost() if order == "cost" else None


def check_weights(
    weights: Mapping[str, float] | None, names: Sequence[str], field: str
) -> list[float]:
    """Weights aligned with ``names`` (a child not named weighs 0; none given: equal)."""
    if weights is None:
        return [1.0] * len(names)
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"{field}: expected a mapping of child name to weight, got {type(weights).__name__}"
        )
    for key, w in weights.items():
        if key not in names:
            raise ValueError(f"{field}: {key!r} names no child; children are {list(names)}")
        if isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w < math.inf:
            raise ValueError(f"{field}[{key!r}]={w!r} must be a finite number >= 0")
    out = [float(weights.get(n, 0.0)) for n in names]
    if not any(out):
        raise ValueError(f"{field}: every weight is 0; give at least one child a weight > 0")
    return out
