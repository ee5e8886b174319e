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

from orchestrator.routing.state import MAX_SAMPLES
from orchestrator.types import Result

if TYPE_CHECKING:
    from orchestrator.engine.run import Run

__all__ = ["call_began", "call_ended", "call_sampled"]


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
    """The call to ``name`` ended with ``outcome`` (None: cancelled): no longer in flight,
    and sampled when the order reads latency too (the engine asks ``router.ended``, this
    when the order counts calls in flight)."""
    router = run.agent.router
    busy = router.busy
    if busy is not None:
        n = busy.get(name, 0)
        busy[name] = n - 1 if n > 0 else 0
    else:
        (router.found or router.state(run.agent)).ended(name)
    if router.times:
        call_sampled(run, name, outcome, inner)


def call_sampled(run: Run, name: str, outcome: object, inner: Run | None = None) -> None:
    """The call to ``name`` ended with ``outcome`` (None: cancelled): a provider's, timed by
    its answering attempt (the last in ``run``'s log), or a nested chain's, by its ``inner``
    run (``router.ended`` when the order reads latency only)."""
    if inner is None and isinstance(outcome, Result):  # a provider's answer: the usual case
        log = run.log
        first_at = log.first_at  # the time to its first content (None: it came whole)
        seconds = log.attempts[-1].duration if first_at is None else first_at - log.began
    elif outcome is None:
        return
    else:
        seconds = _sample(run, name, outcome, inner)
    agent = run.agent
    samples = agent.router.samples
    if samples is None:
        agent.router.state(agent).observe(name, seconds)
        return
    samples.append((name, seconds, agent.clock.now()))
    if len(samples) >= MAX_SAMPLES:
        agent.router.fold()


def _sample(run: Run, name: str, outcome: object, inner: Run | None) -> float:
    """A nested chain's sample (timed by its ``inner`` run), or a failed call's."""
    if isinstance(outcome, Result):
        assert inner is not None
        first_at = inner.log.first_at
        return inner.elapsed() if first_at is None else first_at - inner.log.started
    log = run.log
    took = (
        inner.elapsed() if inner is not None else log.attempts[-1].duration if log.attempts else 0.0
    )
    known = run.agent.router.state(run.agent).latency(name)
    average = known[0] if known is not None and math.isfinite(known[0]) else took
    return max(took, 2 * average)
