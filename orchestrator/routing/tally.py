"""What a run tells the routing state about each child it calls: in flight, and how fast.

Only for the strategies that read it (``least_busy``: calls in flight; ``latency``:
a sample per call); other agents' calls cost one attribute check. A call's sample
is its time to first token: for a streamed call, from its answering attempt's
start to that attempt's first content (a text or tool-call delta; for a nested
chain, from the inner run's start); for a whole reply (``run``, or a provider
that cannot stream), the reply's arrival is its first token. A call that failed
counts as its attempt's whole time, at least twice the child's average, so a
region that fails fast is not taken for a fast one; a cancelled call tells nothing.

With the memory state a count is a dict entry changed here (``router.busy``) and a
sample joins the router's batch (``router.samples``), folded into the averages when
the order is made again (:meth:`~orchestrator.routing.router.Router.fold`): no call
into the state per call. Another state is told each one as it comes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from orchestrator.routing.router import MAX_SAMPLES
from orchestrator.types import Result

if TYPE_CHECKING:
    from orchestrator.engine.run import Run

__all__ = ["call_began", "call_ended"]


def call_began(run: Run, name: str) -> None:
    """A call to child ``name`` starts (the engine asks when ``router.counts``): in flight
    until :func:`call_ended`."""
    router = run.agent.router
    busy = router.busy
    if busy is not None:
        busy[name] = busy.get(name, 0) + 1
    else:
        (router.found or router.state(run.agent)).began(name)


def call_ended(run: Run, name: str, outcome: object, inner: Run | None = None) -> None:
    """The call to ``name`` ended with ``outcome`` (None: cancelled): a provider's, timed by
    its answering attempt (the last in ``run``'s log), or a nested chain's, by its ``inner``
    run (the engine asks when ``router.tracks``)."""
    router = run.agent.router
    if router.counts:
        busy = router.busy
        if busy is not None:
            n = busy.get(name, 0)
            busy[name] = n - 1 if n > 0 else 0
        else:
            (router.found or router.state(run.agent)).ended(name)
    if outcome is None or not router.times:
        return
    log = run.log if inner is None else inner.log
    if isinstance(outcome, Result):  # a sample: the time to its first content
        first_at = log.first_at  # None: the answer came whole
        if first_at is not None:
            seconds = first_at - (log.began if inner is None else log.started)
        else:
            seconds = log.attempts[-1].duration if inner is None else inner.elapsed()
    else:
        took = (
            inner.elapsed()
            if inner is not None
            else log.attempts[-1].duration
            if log.attempts
            else 0.0
        )
        known = router.state(run.agent).latency(name)
        average = known[0] if known is not None and math.isfinite(known[0]) else took
        seconds = max(took, 2 * average)
    samples = router.samples
    if samples is None:
        (router.found or router.state(run.agent)).observe(name, seconds)
        return
    samples.append((name, seconds, run.agent.clock.now()))
    if len(samples) >= MAX_SAMPLES:
        router.fold()
