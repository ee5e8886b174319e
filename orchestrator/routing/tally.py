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


def call_began(run: Run, name: str) -> RoutingState:
    """A call to child ``name`` starts (the engine asks when ``router.tracks``); the state
    to tell when it ends."""
    router = run.agent.router
    state = router.found or router.state(run.agent)
    if router.counts:
        state.began(name)
    return state


def call_ended(
    run: Run, state: RoutingState, name: str, outcome: object, inner: Run | None = None
) -> None:
    """The call to ``name`` ended with ``outcome`` (None: cancelled): a provider's, timed by
    its answering attempt (the last in ``run``'s log), or a nested chain's, by its ``inner``
    run."""
    router = run.agent.router
    if router.counts:
        state.ended(name)
    if outcome is None or not router.times:
        return
    log = run.log if inner is None else inner.log
    if isinstance(outcome, Result):  # a sample: the time to its first content
        first_at = log.first_at  # None: the answer came whole
        if first_at is not None:
            state.observe(name, first_at - (log.began if inner is None else log.started))
        else:
            state.observe(name, log.attempts[-1].duration if inner is None else inner.elapsed())
        return
    took = (
        inner.elapsed() if inner is not None else log.attempts[-1].duration if log.attempts else 0.0
    )
    known = state.latency(name)
    average = known[0] if known is not None and math.isfinite(known[0]) else took
    state.observe(name, max(took, 2 * average))
