"""Hedged requests: when a child is slow to its first content, start the next one in parallel.

``FallbackAgent(hedge_after=0.4)`` (seconds) or ``hedge_after="p95"`` (adaptive)
with ``max_hedges=1``. Each child of a hedged call runs in a *lane* of its own (a
run sharing the caller's delivery, with its own attempt log and health verdict);
the first one in the caller's task and run, the race built around it only if it
waits (:mod:`~orchestrator.engine.inline`: most calls answer before their delay).
When the newest lane has produced no content ``hedge_after`` after it started,
the next child starts in a new lane, after ``before_fallback`` with reason
``"hedge"`` (so redaction applies; a :class:`~orchestrator.types.Stop` from it
means no hedge). The first lane to produce content (a text or tool-call delta, or
a whole reply from a provider that cannot stream) wins: the others are cancelled
at once (their streams closed, their connections released, no task left) and
recorded with reason ``hedge_lost``, with the input tokens they were sent
estimated (:func:`~orchestrator.tokens.input_tokens_estimate`) and priced at the
provider's rates when it has any (``note`` says both are estimated), so the
result's ``cost_usd`` includes them. On spans (when telemetry is on) each lane's
attempts are CLIENT spans of the one run span, a hedge's with ``failover.hedge``;
a loser's span ends when it is cancelled, with decision and reason ``hedge_lost``.
Nothing reaches a stream's consumer before a lane wins, so a consumer never sees
two replies. A lane that fails before any lane
won is recorded as usual; the others race on. A winner that fails after its
first content hands over to the first lane it beat (which lost only the race),
as an unhedged chain would.

Hedges never amplify an outage: with a health store each hedge takes a token
from the retry budget (none left: no hedge) and never goes to a child whose
circuit is not closed. Nor does a hedge go to a child whose context window
cannot hold the request (:func:`~orchestrator.engine.children.too_long`, judged
on the request before ``before_fallback``): the call is simply not hedged, and
if it falls over later the child is the usual ``context_window`` skip. Each lane
calls its provider under the provider's first-token and idle deadlines, as an
unhedged call does. Only providers hedge and are hedged to (a nested chain
is tried in order, as without hedging), and only before any text was streamed.

The delay (fixed, or adaptive ``"pNN"``) is :mod:`orchestrator.engine.hedge_delay`'s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from orchestrator import events
from orchestrator.clock import SystemClock
from orchestrator.engine.children import ProviderChild, too_long
from orchestrator.engine.handover import before_fallback, with_handover
from orchestrator.engine.hedge_delay import FLOOR, MIN_SAMPLES, TAIL_CAP, WINDOW, Hedging
from orchestrator.engine.hedge_delay import can_hedge as can_hedge  # the run asks here
from orchestrator.engine.hedge_delay import check_hedged as check_hedged  # and the agent
from orchestrator.engine.inline import Adopted, drive
from orchestrator.engine.racer import Racer
from orchestrator.engine.run import Run  # after children, which imports it first
from orchestrator.tasks import cancel_and_wait
from orchestrator.types import Request, Result, Stop

if TYPE_CHECKING:
    from orchestrator.engine.run import Via

__all__ = ["FLOOR", "MIN_SAMPLES", "TAIL_CAP", "WINDOW", "Hedging", "can_hedge", "race"]


async def race(
    run: Run, idx: int, request: Request, via: Via
) -> tuple[Result | BaseException, int]:
    """Try child ``idx`` (``request`` already handed over), hedged; the outcome and the
    index of the last child tried (the run goes on after it).

    The first lane's call runs in the caller's task (:mod:`.inline`) and in the run
    itself (the run's pending note is the call's): the race (a watcher task deciding
    on hedges) is built only once the call waits (:meth:`_Race.adopt`)."""
    hedged = _Race(run)
    lane, call = hedged.lane(idx, request, via, None)
    try:
        try:
            outcome: Result | BaseException = await drive(call, hedged.adopt)
        except BaseException as e:
            if not hedged.ended_inline(lane, None, e):
                raise
            outcome = await hedged.outcome()
        else:
            if hedged.ended_inline(lane, outcome, None):  # the watcher decides
                outcome = await hedged.outcome()
    finally:
        await hedged.close()
    if isinstance(outcome, Result) and len(outcome.attempts) != len(run.log.attempts):
        outcome = replace(outcome, attempts=tuple(run.log.attempts), latency=run.elapsed())
    resume = hedged.resume_after()
    hedged.release()
    return outcome, resume


class _Lane:
    """One child racing: its own run (attempt log, verdict), its task and its racer."""

    __slots__ = ("idx", "racer", "run", "task")

    def __init__(self, idx: int, run: Run, racer: Racer, task: asyncio.Future[Any] | None) -> None:
        self.idx, self.run, self.racer, self.task = idx, run, racer, task


class _Race:
    """The lanes of one hedged call and which one won."""

    def __init__(self, run: Run) -> None:
        self.run = run
        hedging = run.agent.hedge
        assert hedging is not None
        self.hedging = hedging
        self.lanes: list[_Lane] = []
        self.finished: list[_Lane] = []
        self.winner: _Lane | None = None
        self.hedges_left = self.hedging.max_hedges
        self._changed: asyncio.Event | None = None  # made when first waited on or set
        #: The task deciding on hedges, once the first lane's call waits (:meth:`first`).
        self.watcher: asyncio.Task[Result | BaseException] | None = None
        self.timer: asyncio.TimerHandle | None = None  # when the watcher starts (system clock)
        #: The caller's task while the first lane's call runs in it, once that call waited.
        self.caller: asyncio.Task[Any] | None = None
        #: Where the first lane's attempts begin in the run's log: that lane is the run
        #: itself (most calls never race: a second run for it was pure cost).
        self.base = len(run.log.attempts)

    def lane(
        self, idx: int, request: Request, via: Via, note: str | None
    ) -> tuple[_Lane, Coroutine[Any, Any, Result | BaseException]]:
        """A lane for child ``idx`` and the call it makes (not started yet)."""
        outer = lane_run = self.run
        member = outer.members[idx]
        assert isinstance(member, ProviderChild)
        if self.lanes:  # a hedge: a run of its own (attempt log, health verdict) with the
            # caller's limits and delivery; its attempts join the run's when the race ends
            limits = (outer.schema, outer.deadline, outer.attempt_limit, outer.delivery)
            lane_run = Run(outer.agent, outer.request, *limits, outer.members)
            lane_run.log.started, lane_run.log.note = outer.log.started, note
            lane_run.log.trace = outer.log.trace  # one run span; each lane's attempts under it
            lane_run.later, lane_run.deferred = idx + 1 < len(outer.members), outer.deferred
        racer = Racer(self, member, lane_run, hedge=bool(self.lanes))
        child = ProviderChild(member.provider, member.policy, racer, member.down)
        lane = _Lane(idx, lane_run, racer, None)
        racer.lane = lane
        self.lanes.append(lane)
        return lane, child.run_in(lane_run, request, via)

    def start(self, idx: int, request: Request, via: Via, note: str | None) -> None:
        """Start child ``idx`` racing in a lane task of its own (a hedge)."""
        lane, call = self.lane(idx, request, via, note)
        lane.task = asyncio.create_task(call)
        lane.task.add_done_callback(lambda _t: self._ended(lane))

    def outcome(self) -> asyncio.Task[Result | BaseException]:
        """What the watcher decides, once the inline call left it the outcome."""
        assert self.watcher is not None
        return self.watcher

    def adopt(self) -> None:
        """The first lane's call waits: from now on it races (the watcher may hedge it)."""
        caller = asyncio.current_task()
        assert caller is not None
        self.caller, lane = caller, self.lanes[0]
        delay = self.hedging.delay(lane.racer.name)
        if delay is None:
            return  # never hedged: nothing to watch
        if type(self.run.agent.clock) is SystemClock:
            # No task, nor a future for the call, until the hedge is due: most calls end
            # before (the loop's clock is the system's; another clock's time moves only as
            # it says, so it is watched).
            loop = asyncio.get_running_loop()
            later = lane.racer.lane_started + delay - time.monotonic()
            self.timer = loop.call_at(loop.time() + later, self._watch, lane)
        else:
            self._watch(lane)

    def _watch(self, lane: _Lane) -> None:
        """Start the watcher (:meth:`decide`), unless the first call won or ended already;
        the call is seen through an :class:`Adopted` future from now on."""
        if self.winner is not None or self.caller is None:
            return
        lane.task = adopted = Adopted(self.caller)
        adopted.add_done_callback(lambda _t: self._ended(lane))
        self.watcher = asyncio.create_task(self.decide())
        # A lane that stopped the run ends the watcher early: the inline call is cut then.
        self.watcher.add_done_callback(lambda _t: adopted.cancel())

    def ended_inline(self, lane: _Lane, outcome: object, error: BaseException | None) -> bool:
        """The inline call ended: whether the watcher decides the outcome (else the call's
        own outcome stands, or its error is raised)."""
        adopted = lane.task
        waited, self.caller = self.caller is not None, None
        if not isinstance(adopted, Adopted):  # no race was built (most calls)
            if waited and isinstance(error, asyncio.CancelledError):
                lane.racer.record_lost()  # the caller's own cancellation cut the call
            return False
        if isinstance(error, asyncio.CancelledError) and not adopted.taken_back():
            adopted.ended(error=error)  # the caller's own cancellation
            lane.racer.record_lost()
            return False
        if error is None and adopted.cut:
            adopted.caller.uncancel()  # cut, but it had ended already
        adopted.ended(outcome, error)
        # No hedge begun (none started, none asking before_fallback): nothing to decide.
        return len(self.lanes) > 1 or self.hedges_left < self.hedging.max_hedges

    @property
    def changed(self) -> asyncio.Event:
        """Set when a lane ended or won; made on first use (most calls never race)."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _ended(self, lane: _Lane) -> None:
        self.finished.append(lane)
        if self._changed is not None:  # else no one waits yet: decide() reads finished first
            self._changed.set()

    def claim(self, racer: Racer) -> None:
        """``racer`` has content: the first to get here wins, the other lanes are cancelled."""
        if self.winner is not None:
            return
        self.winner = racer.lane
        for lane in self.lanes:
            if lane is not self.winner and lane.task is not None:
                lane.task.cancel()
        if self._changed is not None:  # else no one waits: the race was never built
            self._changed.set()

    async def decide(self) -> Result | BaseException:
        """Wait for a winner (hedging when due) or for every lane to end; the outcome."""
        clock = self.run.agent.clock
        while True:
            self.changed.clear()
            for lane in self.finished:
                task = lane.task
                if task is not None and not task.cancelled() and task.exception() is not None:
                    task.result()  # a lane stopped the run: raise what it raised
            if self.winner is not None or len(self.finished) == len(self.lanes):
                break
            at = self._next_hedge_at()
            if at is None:
                await self.changed.wait()
                continue
            cm = clock.timeout_at(at)
            try:
                async with cm:
                    await self.changed.wait()
            except TimeoutError:
                if not getattr(cm, "expired", lambda: False)():
                    raise
                await self._hedge()
        lane = self.winner or self.finished[-1]
        if lane is self.winner:
            await self._stop_losers()
        assert lane.task is not None  # every lane has one once the watcher decides
        outcome: Result | BaseException = await lane.task
        return outcome

    def release(self) -> None:
        """Drop the race's links to its lanes once it is over: race -> lane -> racer ->
        race is a cycle, which the collector, not reference counting, would have to free
        on every call (a gateway worker's collector was a large share of its CPU)."""
        for lane in self.lanes:
            lane.racer.lane = None
            if lane.run is not self.run:
                lane.run.log.trace = None
        self.lanes, self.finished, self.winner = [], [], None

    def resume_after(self) -> int:
        """The index of the last child this race tried out: the run goes on after it.

        A lane cancelled because another won lost only the race to first content:
        should the winner then fail, the run goes on to the first such lane after
        it, as an unhedged chain would have (a lane that failed on its own is done).
        """
        winner = self.winner
        if len(self.lanes) == 1:  # never raced (most calls)
            return self.lanes[0].idx
        beaten = [
            lane.idx
            for lane in self.lanes
            if winner is not None and lane.idx > winner.idx and _cancelled(lane.task)
        ]
        return min(beaten) - 1 if beaten else self.lanes[-1].idx

    def _next_hedge_at(self) -> float | None:
        last = self.lanes[-1]
        if self.hedges_left == 0 or last.idx + 1 >= len(self.run.members):
            return None
        delay = self.hedging.delay(last.racer.name)
        return None if delay is None else last.racer.lane_started + delay

    async def _hedge(self) -> None:
        """Start the next child in a lane of its own, if its circuit, the budget and
        ``before_fallback`` let it; else no more hedges in this call."""
        run, last = self.run, self.lanes[-1]
        self.hedges_left -= 1
        target = run.members[last.idx + 1]
        why = "a nested chain" if not isinstance(target, ProviderChild) else _refused(run, target)
        decision: Request | Stop | None = None
        if why is None:
            decision = await before_fallback(run, "hedge")
            why = "stopped by before_fallback" if isinstance(decision, Stop) else None
            if self.winner is not None:  # a lane won while the hook ran: nothing to hedge
                return
        if why is not None or not isinstance(decision, Request):
            self.hedges_left = 0
            events.emit("info", "hedge_skipped", agent=run.agent.name, to=target.name, why=why)
            return
        store = run.agent.health_store
        via: Via = "closed"
        if store is not None and isinstance(target, ProviderChild):
            # Admitted only now that it is sure to be called: a half-open probe slot taken
            # here is always used (and resolved) by the hedge.
            via = "probe" if target.admit(store).probe else "closed"
        waited = run.agent.clock.now() - last.racer.lane_started
        events.emit(
            "info",
            "hedge_started",
            agent=run.agent.name,
            child=last.racer.name,
            to=target.name,
            waited=waited,
        )
        if run.log.trace is not None:
            run.log.trace.fell_over(last.racer.name, target.name, "hedge")
        note = f"hedge: {last.racer.name} had no content after {waited:.3f}s"
        tried = run.log.attempts[: self.base]  # the first lane's are not the run's yet
        self.start(last.idx + 1, with_handover(run, decision, "hedge", tried), via, note)

    async def _stop_losers(self) -> None:
        """Cancel every lane still running but the winner; each records ``hedge_lost``."""
        losers = [lane for lane in self.lanes if lane is not self.winner]
        for lane in losers:
            if lane.task is not None:
                lane.task.cancel()
        for lane in losers:
            if lane.task is not None:
                await cancel_and_wait(lane.task)
            lane.racer.record_lost()

    async def close(self) -> None:
        """Leave nothing running (also when the caller is cancelled); join the lanes' logs."""
        try:
            if self.timer is not None:
                self.timer.cancel()
            if self.watcher is not None and not self.watcher.done():
                await cancel_and_wait(self.watcher)
            for lane in self.lanes:
                if lane.task is not None and not lane.task.done():
                    await cancel_and_wait(lane.task)
                    lane.racer.record_lost()
        finally:
            self._join_logs()

    def _join_logs(self) -> None:
        """The lanes' attempts in the run's log, the winner's last (the first lane's are
        there already: alone, nothing moves). A decision its call left pending when cut
        is dropped, as a lane's own log would have dropped it, and so is a note no
        attempt of it took."""
        log, base = self.run.log, self.base
        log.note = None
        if log.pending is not None and log.pending >= base:
            log.pending = None
        if len(self.lanes) == 1:
            return
        own = log.attempts[base:]
        del log.attempts[base:]
        for lane in sorted(self.lanes, key=lambda x: x is self.winner):
            log.attempts.extend(own if lane.run is self.run else lane.run.log.attempts)
            log.deadline_passed = log.deadline_passed or lane.run.log.deadline_passed


def _cancelled(task: asyncio.Future[Any] | None) -> bool:
    return task is not None and task.cancelled()


def _refused(run: Run, target: ProviderChild) -> str | None:
    """Why ``target`` may not take a hedge (None: it may): its context window cannot hold
    the request (it is not hedged to; should the run fall over to it, the usual
    ``context_window`` skip records it), its circuit is not closed, the budget is empty."""
    if too_long(target.provider, run.request) is not None:
        return "its context window cannot hold the request"
    store = run.agent.health_store
    if store is None:
        return None
    if store.snapshot(target.name).state != "closed":
        return "circuit not closed"
    if not store.try_acquire_retry():
        return "retry budget empty"
    return None
