"""Which children can serve a request, and in what order: the one seam a run and an
explanation share.

A run asks :func:`order` once, when it starts, for the order it tries its
children in (``Run.members``); each child then says why it cannot take the
request (:meth:`~orchestrator.engine.children.ProviderChild.can_serve`) before
anything is sent. :func:`explain` asks the same two questions without a run and
without side effects (no circuit's probe is taken, nothing is reserved), so what
it prints can never disagree with what a run does.

Today the order is the chain's own (``priority``); routing strategies plug in
here, and every reason a child is skipped without a request (circuit open,
tools, context window, capacity and budget) is listed by
:func:`why_not`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from orchestrator.errors import CircuitOpen

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.children import ChainChild, ProviderChild
    from orchestrator.health import HealthStore
    from orchestrator.types import Request

__all__ = ["Member", "Verdict", "explain", "order", "why_not"]

Member: TypeAlias = "ChainChild | ProviderChild"


def order(agent: FallbackAgent, request: Request) -> tuple[Member, ...]:
    """The children of ``agent`` in the order a run of ``request`` tries them.

    Every child is in it once: a strategy chooses who goes first, never who is
    left out, so failover still reaches every child.
    """
    return agent.members


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


def explain(agent: FallbackAgent, request: Request) -> tuple[Verdict, ...]:
    """The order a run of ``request`` on ``agent`` would try its children in, and why
    each would be skipped; nothing is sent and nothing in the store changes."""
    store = agent.health_store
    return tuple(
        Verdict(i, child.name, why_not(child, request, store, agent))
        for i, child in enumerate(order(agent, request))
    )


def _is_provider(child: Member) -> bool:
    return hasattr(child, "provider")
