"""What a run tells the routing state about each child it calls: in flight, and how fast.

Only for the strategies that read it (``least_busy``: calls in flight; ``latency``:
a sample per call); other agents' calls cost one attribute check. A call's sample
is its time to first token: for a streamed call, from its answering attempt's
start to that attempt's first content (a text or tool-call delta; for a nested
chain, from the inner run's start); for a whole reply (``run``, or a provider
that cannot stream), the reply's arrival is its first token. A call that failed
counts as its attempt's whole time, at least twice the child's average, so a
region that fails fast is not taken for a fast one; a cancelled call tells nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from orchestrator.types import Result

if TYPE_CHECKING:
    from orchestrator.engine.run import Run
    from orchestrator.routing.state import RoutingState

__all__ = ["call_began", "call_ended"]


def call_began(run: Run, name: str) -> RoutingState | None:
    """A call to child ``name`` starts; the state to tell when it ends (None: nothing)."""
    router = run.agent.router
    if not router.tracks:
        return None
    state = router.found or router.state(run.agent)
    if router.counts:
        state.began(name)
    return state


def call_ended(
    run: Run,
    state: RoutingState,
    name: str,
    took: float,
    outcome: object = None,
    first_at: float | None = None,
    since: float = 0.0,
) -> None:
    """The call to ``name`` ended after ``took`` seconds with ``outcome`` (None: cancelled);
    its answer's first content came at ``first_at`` (clock time; None: it came whole),
    counted from ``since`` (when the answering attempt, or a nested chain's run, began)."""
    router = run.agent.router
    if router.counts:
        state.ended(name)
    if not router.times or outcome is None:
        return
    if isinstance(outcome, Result):
        state.observe(name, took if first_at is None else first_at - since)
        return
    known = state.latency(name)
    average = known[0] if known is not None and math.isfinite(known[0]) else took
    state.observe(name, max(took, 2 * average))
