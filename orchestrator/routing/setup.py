"""An agent's :class:`~orchestrator.routing.router.Router` from its ``order=``, ``weights=``
and ``affinity_ttl=`` arguments, checked once when the agent is built."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from orchestrator.routing.router import Router
from orchestrator.routing.state import DEFAULT_AFFINITY_TTL
from orchestrator.routing.strategies import OrderName, strategy_for
from orchestrator.units import seconds

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent

__all__ = ["DEFAULT_AFFINITY_TTL", "OrderName", "router_for"]


def router_for(
    agent: FallbackAgent,
    order: str,
    weights: Mapping[str, float] | None,
    affinity_ttl: float | timedelta,
) -> Router:
    """The router of ``agent`` (its ``children`` named), or ``ValueError`` naming the fix."""
    ttl = seconds(affinity_ttl, "FallbackAgent.affinity_ttl")
    return Router(strategy_for(order, agent.members, weights), affinity_ttl=ttl)
