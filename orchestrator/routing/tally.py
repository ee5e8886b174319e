"""What a run tells the routing state about each child it calls: in flight, and how fast.

Only for the strategies that read it (``least_busy``: calls in flight; ``latency``:
a sample per call); other agents' calls cost one attribute check. A call's sample
is its answering attempt's duration (for a streamed call too: the time to its
whole reply, an upper bound of the first token's); a call that failed counts
as at least twice the child's average, so a region that fails fast is not taken
for a fast one, and a cancelled call tells nothing.
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
    state = router.state(run.agent)
    if router.counts:
        state.began(name)
    return state


def call_ended(
    run: Run, state: RoutingState, name: str, took: float, outcome: object = None
) -> None:
    """The call to ``name`` ended after ``took`` seconds with ``outcome`` (None: cancelled)."""
    router = run.agent.router
    if router.counts:
        state.ended(name)
    if not router.times or outcome is None:
        return
    if isinstance(outcome, Result):
        state.observe(name, took)
        return
    known = state.latency(name)
    average = known[0] if known is not None and math.isfinite(known[0]) else took
    state.observe(name, max(took, 2 * average))
