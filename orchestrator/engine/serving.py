"""Which children can serve a request, and in what order: the one seam a run and an
explanation share.

A run asks :func:`order` once, when it starts, for the order it tries its
children in (``Run.members``); each child then says why it cannot take the
request (:meth:`~orchestrator.engine.children.ProviderChild.can_serve`) before
anything is sent. :func:`explain` asks the same two questions without a run and
without side effects (no circuit's probe is taken, nothing is reserved), so what
it prints can never disagree with what a run does.

The order is the agent's strategy's (:mod:`orchestrator.routing`; the chain's own
for ``priority``, asked nothing), with an affinity key's child first while
:func:`why_not` has nothing against it; every reason a child is skipped without
a request (circuit open, tools, context window, capacity and budget) is listed by
:func:`why_not`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from orchestrator.errors import CircuitOpen

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.children import ChainChild, ProviderChild
    from orchestrator.engine.run import Run
    from orchestrator.health import HealthStore
    from orchestrator.routing.router import Keys
    from orchestrator.types import Request

__all__ = ["Member", "Verdict", "explain", "order", "route", "routed", "why_not"]

Member: TypeAlias = "ChainChild | ProviderChild"


def order(
    agent: FallbackAgent, request: Request, keys: Keys | None = None, *, peek: bool = False
) -> tuple[Member, ...]:
    """The children of ``agent`` in the order a run of ``request`` tries them.

    Every child is in it once: a strategy chooses who goes first, never who is
    left out, so failover still reaches every child.
    """
    if keys is None and agent.router.plain:
        return agent.members
    return route(agent, request, keys, peek=peek)[0]


def route(
    agent: FallbackAgent, request: Request, keys: Keys | None, *, peek: bool = False
) -> tuple[tuple[Member, ...], str | None]:
    """The order a run of ``request`` tries ``agent``'s children in, and its split arm.

    The strategy orders; then the child that served ``keys.affinity`` last goes
    first while :func:`why_not` has nothing against it (otherwise the strategy's
    first child serves, and the key moves to whoever answers). ``peek`` (an
    explanation) changes nothing: the next run draws what it shows.
    """
    router = agent.router
    strategy, arms = router.strategy, router.arms
    if keys is None:  # the usual run: the strategy's order (a split's arm is its first child's)
        ranked = agent.members if strategy is None else strategy.rank(agent, request, peek, None)
        return ranked, None if arms is None else arms[agent.members.index(ranked[0])]
    if strategy is None:
        ranked = agent.members
    else:  # a split draws its arm by the key (an affinity key splits too)
        ranked = strategy.rank(agent, request, peek, router.draw(agent, keys))
    if arms is not None:
        return ranked, arms[agent.members.index(ranked[0])]
    if keys.affinity is None:
        return ranked, None
    held = router.holder(agent, keys, peek)
    if held is not None and held != router.names[ranked][0]:
        child = next((m for m in ranked if m.name == held), None)
        if child is not None and why_not(child, request, agent.health_store, agent) is None:
            ranked = (child, *(m for m in ranked if m is not child))
    return ranked, None


def routed(run: Run) -> dict[str, Any]:
    """How a routed run chose its order, for its events and span: the order and the split
    arm (nothing for a plain run: the chain's own order, no key)."""
    if run.keys is None and run.agent.router.plain:
        return {}
    return {"order": run.order, "arm": run.arm}


def why_not(
    child: Member, request: Request, store: HealthStore | None, agent: FallbackAgent | None = None
) -> BaseException | None:
    """Why ``child`` would be skipped for ``request`` without a request now, or None.

    Peeks at the health store (no probe is taken), asks the child itself
    (:meth:`~orchestrator.engine.children.ProviderChild.can_serve`), the check a
    run makes before it sends anything, and, given the ``agent`` it is a child
    of, peeks at its limiter and budgets (``at_capacity``, ``budget``: nothing
    is reserved).
    """
    if store is not None:
        health = store.snapshot(child.name) if _is_provider(child) else None
        if health is not None and health.state == "open":
            return CircuitOpen("skipped: circuit open", provider=child.name)
    can_serve = getattr(child, "can_serve", None)
    unfit = None if can_serve is None else can_serve(request)
    if unfit is None and agent is not None and _is_provider(child):
        from orchestrator.engine.capacity import peek  # it imports the run's pieces

        unfit = peek(agent, getattr(child, "provider"), request)  # noqa: B009
    return unfit


@dataclass(frozen=True, slots=True)
class Verdict:
    """One child in an explanation: its place in the order, and why it would be
    skipped (the error a run would record), or None when it would be tried."""

    position: int
    name: str
    skipped: BaseException | None
    #: A nested chain's own explanation (empty for a provider) and its split arm.
    inner: tuple[Verdict, ...] = ()
    arm: str | None = None


def explain(
    agent: FallbackAgent, request: Request, keys: Keys | None = None, *, depth: int = 0
) -> tuple[Verdict, ...]:
    """The order a run of ``request`` on ``agent`` would try its children in, and why
    each would be skipped; nothing is sent and nothing in the store changes (but latency
    samples already taken, folded in as the run would first). A nested chain lists its
    own children (``inner``) in the order its run would try them."""
    store = agent.health_store
    members, _ = route(agent, request, keys, peek=True)
    out = []
    for i, child in enumerate(members):
        nested = getattr(child, "agent", None)
        inner: tuple[Verdict, ...] = ()
        arm = None
        if nested is not None and depth < 8:  # chains nest a few levels; bounded
            inner = explain(nested, request, keys, depth=depth + 1)
            arm = route(nested, request, keys, peek=True)[1]
        out.append(Verdict(i, child.name, why_not(child, request, store, agent), inner, arm))
    return tuple(out)


def _is_provider(child: Member) -> bool:
    return hasattr(child, "provider")
