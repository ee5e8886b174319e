"""One run of a FallbackAgent: the loop over children, hand-overs and endings.

A run holds what it was asked (agent, request, schema, limits), how its text
is delivered (:mod:`~orchestrator.engine.delivery`) and its
:class:`~orchestrator.engine.attempt.AttemptLog`; each child decides how it
is tried (:mod:`~orchestrator.engine.children`).

Hot path: a first attempt that succeeds costs one provider call, one Attempt
and one Result; tenacity is only set up when a retry is actually needed.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import events
from orchestrator.engine.attempt import (
    AttemptLog,
    call_hook,
    schema_json,
    skipped,
    watch_hook,
)
from orchestrator.engine.capacity import every_child_full
from orchestrator.engine.classify import reason_of
from orchestrator.engine.delivery import BUFFERED, Delivery
from orchestrator.engine.handover import before_fallback, with_handover
from orchestrator.engine.serving import Member, route, routed
from orchestrator.errors import FallbackError, InvalidOutput
from orchestrator.policy import RetryPolicy
from orchestrator.summary import never_tried
from orchestrator.telemetry.spans import observe
from orchestrator.types import Request, Result, Stop
from orchestrator.units import seconds_or_none

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.children import Deferred
    from orchestrator.routing.router import Keys

__all__ = ["Run", "Via"]

#: How a child was let in: normally, as the half-open probe, as the last resort, or
#: again for the retries that waited for the later children (``retried_last``).
Via = Literal["closed", "probe", "last_resort", "again"]


class _DeadlinePassed(Exception):
    """Internal: the run's deadline passed; end the run with FallbackError."""


class Run:
    """One ``FallbackAgent.run`` (or a nested chain inside one): children, retries, hand-overs."""

    __slots__ = (
        "agent",
        "arm",
        "attempt_limit",
        "deadline",
        "deferred",
        "delivery",
        "keys",
        "later",
        "log",
        "members",
        "order",
        "request",
        "schema",
    )

    def __init__(
        self,
        agent: FallbackAgent,
        request: Request,
        schema: Any,
        deadline: float | None,
        attempt_limit: float | None,
        delivery: Delivery,
        members: tuple[Member, ...] | None = None,
    ) -> None:
        self.agent, self.request, self.schema = agent, request, schema
        #: The children in the order this run tries them (:func:`.serving.order`).
        self.members = agent.members if members is None else members
        #: Their names (on the Result), the routing keys, the split arm (:mod:`.serving`).
        plain = members is None or members is agent.members  # a hedge lane passes the run's
        self.order = agent.names if plain else agent.router.names[self.members]
        self.keys: Keys | None = None
        self.arm: str | None = None
        self.deadline, self.attempt_limit, self.delivery = deadline, attempt_limit, delivery
        self.log = AttemptLog(agent.clock.now())
        #: Whether a later child can take the call (then a timeout's retries wait for it)
        #: and the children whose retries wait (:func:`~orchestrator.engine.children.come_back`).
        self.later = False
        self.deferred: list[Deferred] = []

    @classmethod
    def start(
        cls,
        agent: FallbackAgent,
        request: Request,
        schema: Any,
        timeout: float | timedelta | None,
        delivery: Delivery = BUFFERED,
        within: Run | None = None,
        keys: Keys | None = None,
    ) -> Run:
        """A run of ``agent``; ``within`` is the outer run of a nested chain (its limits and
        routing keys hold)."""
        limit = agent.timeout if timeout is None else seconds_or_none(timeout, "timeout")
        if schema is not None:
            # Built (and cached) before the clock starts: the first use imports pydantic.
            name = getattr(schema, "__name__", "Output")
            request = request.replace(json_schema=schema_json(schema), schema_name=name)
        deadline = None if limit is None else agent.clock.now() + limit
        attempt_limit = agent.attempt_timeout
        if within is not None:
            deadline = _earliest(within.deadline, deadline)
            attempt_limit = _earliest(within.attempt_limit, attempt_limit)
            keys = within.keys
        if keys is None and agent.router.plain:
            run = cls(agent, request, schema, deadline, attempt_limit, delivery)
        else:  # the agent routes, or the call has a key: ask the seam (engine.serving)
            members, arm = route(agent, request, keys)
            run = cls(agent, request, schema, deadline, attempt_limit, delivery, members)
            run.keys, run.arm = keys, arm
        # Telemetry (orchestrator.telemetry), when on: the log tells it of every attempt.
        run.log.trace = observe(run, within.log.trace if within is not None else None)
        return run

    def elapsed(self) -> float:
        return self.agent.clock.now() - self.log.started

    # -- the chain ---------------------------------------------------------

    async def execute(self, *, counted_by: object = None) -> Result:
        """Try every child in order; the first success wins.

        ``counted_by`` is the outer chain's health store when this chain runs
        nested inside it: that store already counted the call for its budget.
        """
        # -- telemetry: the run's span and its attempts' end here, however the run ends --
        if self.log.trace is not None:
            self.log.trace.started()
        try:
            result = await self._chain(counted_by)
        except BaseException as e:
            self._ended(None, e)
            raise
        self._ended(result, None)
        return result

    def _ended(self, result: Result | None, error: BaseException | None) -> None:
        if self.log.pending is not None:
            self.decided("stop")  # the run ended before deciding (a hook raised, cancelled)
        trace, self.log.trace = self.log.trace, None  # trace -> run -> log -> trace: a cycle
        if trace is not None:
            trace.ended(result, error)

    def decided(self, decision: str) -> None:
        """What follows the last failed attempt (``retry``, ``fallback``, ``stop``): the
        attempt's ``attempt_failed`` event and span carry it."""
        index, self.log.pending = self.log.pending, None
        if index is None:
            return
        failed = self.log.attempts[index]
        events.emit(
            "info",
            "attempt_failed",
            agent=self.agent.name,
            child=failed.agent,
            attempt=failed.attempt_number,
            duration=failed.duration,
            decision=decision,
            **events.attempt_fields(failed),
        )
        if self.log.trace is not None:
            self.log.trace.decided(failed, decision)

    async def _chain(self, counted_by: object) -> Result:
        agent = self.agent
        store = agent.health_store
        if store is not None and store is not counted_by:
            store.record_request()
        skipped_: dict[int, tuple[BaseException, float]] = {}  # circuit open: error, open until
        called = False
        last_error: BaseException | None = None
        prev: str | None = None
        resume = 0  # a hedged call may have tried the children after its own already
        try:
            for idx, child in enumerate(self.members):
                if idx < resume:
                    continue
                via: Via = "closed"
                adm = child.admit(store) if store is not None else None
                if adm is not None and not adm.allowed:
                    # A skipped child hands over like a failed one (reason circuit_open),
                    # so redaction and on_fallback still apply to the next child.
                    last_error = skipped(self, child.name, adm.open_until)
                    skipped_[idx] = (last_error, adm.open_until or 0.0)
                    prev = child.name
                    continue
                if adm is not None and adm.probe:
                    self.log.note = "half-open probe"
                    via = "probe"
                self.later = idx + 1 < len(self.members)
                if prev is None and not agent.hedges:  # nothing to hand over, nor to hedge
                    outcome, resume = await child.run_in(self, self.request, via), idx
                else:
                    outcome, resume = await self.next_child(idx, prev, last_error, via)
                if not isinstance(outcome, BaseException):
                    return self._succeeded(outcome)
                called, last_error, prev = True, outcome, self.members[resume].name
                resume += 1
            if self.deferred or (not called and skipped_):
                from orchestrator.engine.children import rescue  # it imports the run

                rescued = await rescue(self, called, skipped_, prev, last_error)
                if rescued is not None:
                    return self._succeeded(rescued)
        except _DeadlinePassed:
            self.log.deadline_passed = True  # also when it passed between two children
        return await self._all_failed()

    async def next_child(
        self, idx: int, prev: str | None, last_error: BaseException | None, via: Via
    ) -> tuple[Result | BaseException, int]:
        """Hand over to child ``idx`` (hooks first) and try it, hedged if the agent hedges;
        a Result or the error, and the index of the last child tried."""
        child = self.members[idx]
        request = self.request
        if prev is not None and last_error is not None:
            decision = await self._hand_over(prev, child.name, last_error)
            if isinstance(decision, Stop):
                return self._stopped(decision), idx
            request = decision
        if self.agent.hedges and via in ("closed", "probe"):
            from orchestrator.engine.hedging import can_hedge, race  # it imports the run

            if can_hedge(self, idx):
                return await race(self, idx, request, via)
        return await child.run_in(self, request, via), idx

    def _check_deadline(self) -> None:
        if self.deadline is not None and self.agent.clock.now() >= self.deadline:
            raise _DeadlinePassed

    async def _hand_over(self, frm: str, to: str, error: BaseException) -> Request | Stop:
        agent = self.agent
        self._check_deadline()
        reason = reason_of(error)
        request = await before_fallback(self, reason)
        if isinstance(request, Stop):
            return request
        events.emit(
            "info",
            "fallback",
            agent=agent.name,
            child=frm,
            to=to,
            reason=reason,
            **events.error_fields(error),
        )
        if self.log.trace is not None:
            self.log.trace.fell_over(frm, to, reason)
        if agent.on_fallback is not None:
            extra = (reason,) if agent.on_fallback_wants_reason else ()
            await watch_hook(self, "on_fallback", agent.on_fallback, frm, to, error, *extra)
        self._check_deadline()  # the hooks may have used up the budget: do not start the child
        return with_handover(self, request, reason)

    # -- what the children ask of the run ------------------------------------

    def retryable(self, error: BaseException, policy: RetryPolicy) -> bool:
        """Whether ``error`` may be retried on the same child (its policy permitting)."""
        if self.log.deadline_passed or self.delivery.committed(error):
            return False
        if isinstance(error, InvalidOutput) and self.agent.schema_retries == 0:
            return False
        return self.agent.classifier.retryable(error) and policy.allows_retry_after(error)

    def leave(self, name: str, error: BaseException) -> BaseException:
        """The child is done with ``error``: hand over (return it) or stop (raise it)."""
        if self.log.deadline_passed:
            self.decided("stop")
            raise _DeadlinePassed
        if self.delivery.committed(error):  # text went out: the failure is the caller's
            why: dict[str, Any] = {
                "reason": "mid_stream",
                "mid_stream": getattr(self.delivery, "mode", None),
                "tool_call": getattr(self.delivery, "tool_started", False),
            }
        elif not self.agent.classifier.hands_over(error):
            why = {}
        else:
            self.decided("fallback")
            return error
        self.decided("stop")
        fields = events.error_fields(error)
        events.emit("warning", "terminal_error", agent=self.agent.name, child=name, **why, **fields)
        raise error

    # -- endings -------------------------------------------------------------

    def _succeeded(self, result: Result) -> Result:
        if result.order is not self.order or result.arm != self.arm:  # a lane's, an inner run's
            result = replace(result, order=self.order, arm=self.arm)
        if self.keys is not None:
            self.agent.router.served(self.agent, self.keys, result.handled_by)
        if result.stopped is not None or not events.is_enabled():
            return result  # run_stopped was emitted already; or no event (its fields cost)
        events.emit(
            "info",
            "run_succeeded",
            agent=self.agent.name,
            **(routed(self) if self.keys is not None or not self.agent.router.plain else {}),
            handled_by=result.handled_by,
            attempts=len(result.attempts),
            latency=result.latency,
            cost_usd=result.cost_usd,
            unpriced_attempts=len(result.unpriced_attempts),
        )
        return result

    def _stopped(self, stop: Stop) -> Result:
        self.delivery.push(stop.text)
        events.emit("info", "run_stopped", agent=self.agent.name, reason=stop.reason)
        return Result(
            stop.text,
            None,
            tuple(self.log.attempts),
            self.elapsed(),
            stopped=stop,
            order=self.order,
        )

    async def _all_failed(self) -> Result:
        agent = self.agent
        attempts = self.log.attempts
        errors = [a.error for a in attempts if a.error is not None]
        untried = never_tried(agent.members, attempts) if self.log.deadline_passed else ()
        events.emit(
            "warning",
            "run_failed",
            agent=agent.name,
            **(routed(self) if self.keys is not None or not self.agent.router.plain else {}),
            attempts=len(attempts),
            deadline=self.log.deadline_passed,
            untried=list(untried),
        )
        if agent.on_all_failed is not None:
            await watch_hook(self, "on_all_failed", agent.on_all_failed, errors)
        if agent.best_effort is not None:
            text = await call_hook("best_effort", agent.best_effort, tuple(attempts))
            if text is not None:
                self.delivery.push(str(text))
                took = self.elapsed()
                return Result(
                    str(text), None, tuple(attempts), took, best_effort=True, order=self.order
                )
        # Every child at its limit: the caller is rate limited, told when one frees.
        raise every_child_full(attempts) or FallbackError(
            attempts, name=agent.name, untried=untried, order=self.order, arm=self.arm
        )


def _earliest(a: float | None, b: float | None) -> float | None:
    """The tighter of two optional limits (``None``: no limit)."""
    return b if a is None or (b is not None and b <= a) else a
