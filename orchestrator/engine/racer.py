"""The provider as a hedged call's lane calls it: the lane claims the race at its first content.

Used by :mod:`orchestrator.engine.hedging`; a lane cancelled by the race records the
call it was in as ``hedge_lost``, with its estimated input tokens and cost.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from typing import TYPE_CHECKING, Any

from orchestrator import events
from orchestrator.engine.deadlines import Seen, Watched, assemble
from orchestrator.tokens import input_tokens_estimate
from orchestrator.types import Attempt, Request, Response, Usage

if TYPE_CHECKING:
    from orchestrator.engine.children import ProviderChild
    from orchestrator.engine.hedging import _Lane, _Race
    from orchestrator.engine.run import Run

__all__ = ["Racer", "estimated_cost"]


class Racer:
    """The provider as one lane calls it: the lane claims the race at its first content.

    ``hedge``: this lane was started by a hedge (its attempts' spans say so);
    ``wrapped``: the provider itself (telemetry describes it, not this view).
    """

    __slots__ = (
        "call",
        "callee",
        "hedge",
        "lane",
        "lane_run",
        "lane_started",
        "name",
        "race",
        "request",
        "since",
        "wrapped",
    )

    def __init__(self, race: _Race, member: ProviderChild, lane_run: Run, *, hedge: bool) -> None:
        self.race, self.callee, self.lane_run = race, member.callee, lane_run
        self.wrapped, self.hedge = member.provider, hedge
        self.name: str = member.callee.name
        self.lane: _Lane | None = None
        self.lane_started = lane_run.agent.clock.now()
        #: The call in progress: (attempt number, monotonic start, wall start), or None.
        self.call: tuple[int, float, float] | None = None
        self.request: Request | None = None
        #: Where this lane's attempts begin in its run's log (the first lane's run is the
        #: caller's, which may hold earlier children's).
        self.since = len(lane_run.log.attempts)

    def complete(self, request: Request) -> Awaitable[Response]:
        """The reply; streamed when the provider can, so its first content is seen."""
        return self.assembled(request)

    def assembled(self, request: Request, seen: Seen | None = None) -> Awaitable[Response]:
        """The reply, the lane's call starting now: streamed when the provider can (its
        items but the last told to ``seen``), claiming the race at its first content."""
        clock = self.lane_run.agent.clock
        self.call = (len(self.lane_run.log.attempts) - self.since + 1, clock.now(), clock.wall())
        self.request = request
        if isinstance(self.callee, Watched):  # its deadlines and the claim in one loop
            return self.callee.assembled(request, seen, self._first)
        return self._assembled(request, seen)

    async def _assembled(self, request: Request, seen: Seen | None) -> Response:
        source = getattr(self.callee, "stream", None)
        agen = source(request) if callable(source) else _whole(self.callee, request)
        return await assemble(agen, self.name, seen, self._first)

    def _first(self, item: object) -> None:
        """Claim the race at the call's first content (its reply if none came before),
        learning its latency."""
        if self.race.winner is None:
            assert self.call is not None
            started = self.call[1]
            self.race.hedging.observe(self.name, self.lane_run.agent.clock.now() - started)
            self.race.claim(self)

    def record_lost(self) -> None:
        """Record the call this lane was cancelled in (if any) as lost to a hedge."""
        log = self.lane_run.log
        made = len(log.attempts) - self.since
        if self.call is None or self.request is None or self.call[0] <= made:
            return  # not in a call, or the call's attempt is already recorded
        number, t0, wall = self.call
        usage = Usage(input_tokens_estimate(self.request), 0)
        cost = estimated_cost(self.wrapped, usage)
        note = f"usage estimated: ~{usage.input_tokens} input tokens (request chars / 4), no output"
        if cost is not None:
            note += f", cost estimated at the provider's rates: ${cost:.6f}"
        note = f"{log.note}; {note}" if log.note else note
        duration = self.lane_run.agent.clock.now() - t0
        if self.race.winner is not None:
            self.race.hedging.observe(self.name, duration)  # a lower bound: it had no content
        lost = Attempt(self.name, None, number, wall, duration, "hedge_lost", usage, cost, note)
        log.add(lost)
        winner = self.race.winner
        events.emit(
            "info",
            "hedge_lost",
            agent=self.lane_run.agent.name,
            child=self.name,
            attempt=number,
            duration=duration,
            winner=winner.racer.name if winner is not None else None,
            **events.attempt_fields(lost),
        )
        if log.trace is not None and winner is not None:
            # Lost to a winner: its span ends as such. Without one (the caller cancelled,
            # another lane stopped the run) the run's end closes it as cut short.
            log.trace.lost(lost)
        self.call = None


async def _whole(provider: Any, request: Request) -> AsyncGenerator[Any, None]:
    """The reply of a provider that cannot stream, as a stream: its text, then itself."""
    response: Response = await provider.complete(request)
    if response.text:
        yield response.text
    yield response


def estimated_cost(provider: Any, usage: Usage) -> float | None:
    """USD for ``usage`` at ``provider``'s rates (its ``rates.cost``, else its ``price``
    per million input and output tokens); None when it has neither (no cost rather than
    a wrong one)."""
    cost_at_rates = getattr(getattr(provider, "rates", None), "cost", None)
    if callable(cost_at_rates):
        cost = cost_at_rates(usage)
        return float(cost) if isinstance(cost, int | float) else None
    price = getattr(provider, "price", None)
    if isinstance(price, tuple) and len(price) == 2:
        pin, pout = float(price[0]), float(price[1])
        return (usage.input_tokens * pin + usage.output_tokens * pout) / 1_000_000
    return None
