"""The order strategies of a FallbackAgent (``order=``): who goes first, and who follows.

Each strategy is a small object bound to one agent's children, with one method,
``rank(members, choice)``, returning every child once: a strategy chooses who
goes first, never who is left out, so failover still reaches every child.

- ``priority``: the chain's own order (the default; the engine does not even ask).
- ``weighted``: the first child drawn by weight; the others follow in chain order.
- ``least_busy``: fewest calls in flight first (shared through the health store).
- ``latency``: lowest recent time to first token first (a decayed average per child of
  what :mod:`~orchestrator.routing.tally` samples); a child not sampled for
  ``explore_after`` seconds goes first once, so a region that recovered is noticed.
- ``cost``: cheapest first by catalogue price for this request (providers with a
  ``rates`` object with ``cost(usage)``, or a ``price`` of USD per million input and
  output tokens); unpriced children last.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from orchestrator.routing.state import FORGET_AFTER
from orchestrator.tokens import input_tokens_estimate
from orchestrator.types import Request
from orchestrator.usage import Usage

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent as Agent
    from orchestrator.engine.serving import Member

#: An order of an agent's children (each once); a key's hash in [0, 1), or None.
Order: TypeAlias = "tuple[Member, ...]"
Draw: TypeAlias = "float | None"

__all__ = [
    "ORDERS",
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
#: ``latency``: an order is reused for this long (seconds) before the figures are read again.
RERANK_AFTER = 0.05
#: ``cost``: output tokens assumed for a request without ``max_tokens``.
OUTPUT_GUESS = 512


class Strategy(Protocol):
    """One order strategy bound to an agent's children (``members``, in chain order).

    ``rank`` is asked once per run: ``agent`` gives its children in chain order
    (``agent.members``), the routing state (``agent.router.state(agent)``), the
    clock and the seeded ``rng``; ``draw`` is a
    key's hash in [0, 1) for a split (the same key, the same draw); ``peek`` marks an
    explanation, which changes nothing (the next run draws what it shows).
    """

    name: str
    #: What the engine must tell the routing state: calls in flight, latency samples.
    counts: bool
    times: bool

    def rank(self, agent: Agent, request: Request, peek: bool, draw: Draw) -> Order: ...


class Weighted:
    """The first child drawn by weight (``weights`` aligned with ``members``, the agent's
    children); the others follow in chain order.

    Without a key the draws are a low-discrepancy sequence (golden-ratio steps from
    a start drawn from the agent's ``rng``): every window of calls lands within a
    fraction of a point of the weights, not only their average over many.
    """

    name = "weighted"
    counts = times = False
    __slots__ = ("bounds", "cumulative", "next", "orders")

    def __init__(self, weights: Sequence[float], members: Order) -> None:
        running, self.cumulative = 0.0, []
        for w in weights:
            running += w
            self.cumulative.append(running)
        #: Where each child's share of [0, 1) ends (the last is 1.0 exactly): a draw is
        #: looked up as it is, not scaled first.
        self.bounds = [c / running for c in self.cumulative]
        self.next: float | None = None  # the next draw (the first from the agent's rng)
        #: The order with each child first; the last once more, for a draw of 1.0 (a key's
        #: hash may round up to it).
        orders = [(m, *members[:i], *members[i + 1 :]) for i, m in enumerate(members)]
        self.orders: tuple[Order, ...] = (*orders, orders[-1])

    def rank(self, agent: Agent, request: Request, peek: bool, draw: Draw) -> Order:
        """The order whose first child ``draw`` (a key's hash) picks, else the next step
        of the sequence (``peek``: shown, not taken)."""
        if draw is None:
            draw = self.next
            if draw is None:
                draw = _start(agent, peek)
            if not peek:
                self.next = (draw + _GOLDEN) % 1.0
        return self.orders[bisect_right(self.bounds, draw)]


def _start(agent: Agent, peek: bool) -> float:
    """A sequence's first draw, from the agent's ``rng`` (``peek``: the draw the next run
    will make, not taken from it)."""
    rng = agent.rng
    if peek:
        rng = random.Random()
        rng.setstate(agent.rng.getstate())
    return rng.random()


class LeastBusy:
    """Fewest calls in flight first; ties keep chain order."""

    name = "least_busy"
    counts, times = True, False
    __slots__ = ("orders",)

    def __init__(self) -> None:
        self.orders: dict[tuple[int, ...], Order] = {}

    def rank(self, agent: Agent, request: Request, peek: bool, draw: Draw) -> Order:
        router, names = agent.router, agent.names
        busy = router.busy  # a memory state's counts, read without a call
        if busy is not None:
            if not busy.get(names[0]):
                return agent.members  # the first is idle: none is less busy (the usual case)
            counts = [busy.get(name, 0) for name in names]
        else:
            in_flight = (router.found or router.state(agent)).in_flight
            if not in_flight(names[0]):
                return agent.members
            counts = [in_flight(name) for name in names]
        if min(counts) == counts[0]:
            return agent.members  # the first is among the least busy: chain order
        ranked = sorted(range(len(names)), key=counts.__getitem__)
        return ordered(agent.members, ranked, self.orders)


class LatencyFirst:
    """Lowest decayed average time to first token first; a child unsampled for
    ``explore_after`` seconds goes first once (claimed, so one run explores it, not every
    run at once).

    The order is recomputed at most every :data:`RERANK_AFTER` seconds (busy agents
    reuse it: figures move little in 50 ms, and nothing is sorted meanwhile); an
    exploration is never reused.
    """

    name = "latency"
    counts, times = False, True
    __slots__ = ("explore_after", "made", "order", "orders", "until")

    def __init__(self, explore_after: float = EXPLORE_AFTER) -> None:
        self.explore_after = explore_after
        self.orders: dict[tuple[int, ...], Order] = {}
        #: The last order made (at ``made``), reused until ``until`` (none: ``until`` is -inf).
        self.order: Order = ()
        self.made = self.until = -math.inf

    def rank(self, agent: Agent, request: Request, peek: bool, draw: Draw) -> Order:
        now = agent.clock.now()
        if self.made <= now < self.until:
            return self.order
        order, explored = self._rank(agent, now, peek)
        if not peek:
            self.order, self.made = order, now
            self.until = -math.inf if explored else now + RERANK_AFTER
        return order

    def _rank(self, agent: Agent, now: float, peek: bool) -> tuple[Order, bool]:
        """The order by the figures now, and whether it explores a stale child."""
        members = agent.members
        state = agent.router.state(agent)
        latency, horizon = state.latency, now - self.explore_after
        scores: list[float] = []
        stalest, stalest_at = -1, math.inf
        for i, name in enumerate(agent.names):
            known = latency(name)
            if known is None:
                at, score = -math.inf, math.inf
            else:
                score, at = known
            if at <= horizon and at < stalest_at:
                stalest, stalest_at = i, at
            scores.append(score)
        explores = stalest >= 0 and len(members) > 1
        if explores:
            if not peek:
                state.explored(members[stalest].name)
            scores[stalest] = -math.inf  # explored: first, once
        ranked = sorted(range(len(members)), key=scores.__getitem__)
        return ordered(members, ranked, self.orders), explores


class Cost:
    """Cheapest first by catalogue price for this request; unpriced children last."""

    name = "cost"
    counts = times = False
    __slots__ = ("flat", "prices")

    def __init__(self, members: Sequence[Any]) -> None:
        self.prices = [_pricer(m) for m in members]
        #: When flat prices rank the same by input and by output (or unpriced: last), the
        #: order is the same for every request: computed once.
        self.flat: tuple[Any, ...] | None = None
        if all(p is None or isinstance(p, tuple) for p in self.prices):
            by_in = sorted(range(len(members)), key=lambda i: _rate(self.prices[i], 0))
            by_out = sorted(range(len(members)), key=lambda i: _rate(self.prices[i], 1))
            if by_in == by_out:
                self.flat = tuple(members[i] for i in by_in)

    def rank(self, agent: Agent, request: Request, peek: bool, draw: Draw) -> Order:
        if self.flat is not None:
            return self.flat
        tokens = (input_tokens_estimate(request), request.max_tokens or OUTPUT_GUESS)
        costs = [_cost(p, tokens) for p in self.prices]
        return ordered(agent.members, sorted(range(len(costs)), key=costs.__getitem__), {})


def ordered(members: Order, ranked: list[int], made: dict[tuple[int, ...], Order]) -> Order:
    """``members`` in the order of the indices ``ranked``; each order is made once (``made``,
    a handful for a few children), so the run's names for it are made once too."""
    key = tuple(ranked)
    order = made.get(key)
    if order is None:
        order = tuple(members[i] for i in ranked)
        if len(made) < 720:  # every order of up to 6 children; more are not kept
            made[key] = order
    return order


def _pricer(member: Any, depth: int = 0) -> Any:
    """How ``member`` is priced: a flat ``(input, output)`` USD per 1M tokens, a rates
    object whose ``cost(usage)`` knows tiers, a list (a nested chain: its cheapest), or
    None (unpriced)."""
    agent = getattr(member, "agent", None)
    if agent is not None:
        return [_pricer(m, depth + 1) for m in agent.members] if depth < 8 else None
    provider = getattr(member, "provider", member)
    rates: Any = getattr(provider, "rates", None)
    if callable(getattr(rates, "cost", None)):
        tiers = getattr(rates, "input_tiers", None), getattr(rates, "output_tiers", None)
        flat = isinstance(getattr(rates, "input", None), int | float) and tiers == ((), ())
        return (float(rates.input), float(rates.output)) if flat else rates
    price = getattr(provider, "price", None)
    if isinstance(price, tuple) and len(price) == 2:
        return (float(price[0]), float(price[1]))
    return None


def _rate(price: tuple[float, float] | None, which: int) -> float:
    """A flat price's input (0) or output (1) rate; unpriced sorts last."""
    return math.inf if price is None else price[which]


def _cost(pricer: Any, tokens: tuple[int, int]) -> float:
    """USD for ``tokens`` (input, output) at ``pricer`` (infinite when unpriced)."""
    if pricer is None:
        return math.inf
    if isinstance(pricer, tuple):
        return float(tokens[0] * pricer[0] + tokens[1] * pricer[1]) / 1e6
    if isinstance(pricer, list):
        return min((_cost(p, tokens) for p in pricer), default=math.inf)
    cost: float = pricer.cost(Usage(*tokens))
    return float(cost)


def strategy_for(
    order: str, members: Sequence[Any], weights: Mapping[str, float] | None
) -> Strategy | None:
    """The strategy ``order=`` names for an agent's ``members`` (None for ``priority``);
    ``ValueError`` naming the fix for an unknown order or bad weights."""
    names = [m.name for m in members]
    if order not in ORDERS:
        raise ValueError(f"order: {order!r} is not one of {', '.join(ORDERS)}")
    if weights is not None and order != "weighted":
        raise ValueError(f"weights: given with order={order!r}; weights need order='weighted'")
    if order == "weighted":
        return Weighted(check_weights(weights, names, "weights"), tuple(members))
    if order == "least_busy":
        return LeastBusy()
    if order == "latency":
        return LatencyFirst()
    return Cost(members) if order == "cost" else None


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
