"""How each kind of chain child is tried: a provider (admitted, retried) or a nested chain.

:class:`FallbackAgent` wraps each child once, at construction, in one of these;
the run then calls ``admit`` and ``run_in`` without asking what the child is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from orchestrator.engine import capacity
from orchestrator.engine.attempt import accepts, attempt, report_call, skip
from orchestrator.engine.retrying import Held, retries_later, retry
from orchestrator.engine.run import Run, Via
from orchestrator.errors import (
    ContextWindowExceeded,
    FallbackError,
    RateLimited,
    Rejected,
    ToolsUnsupported,
)
from orchestrator.policy import RetryPolicy
from orchestrator.routing.tally import call_began
from orchestrator.tokens import fits, input_tokens_at_least
from orchestrator.types import Request, Result

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.health import Admission, HealthStore

__all__ = [
    "ChainChild",
    "Deferred",
    "Down",
    "ProviderChild",
    "come_back",
    "last_resort",
    "rescue",
    "too_long",
]


class ProviderChild:
    """A provider in a chain: admitted by the health store, retried under its policy."""

    __slots__ = ("callee", "down", "policy", "provider")

    def __init__(
        self, provider: Any, policy: RetryPolicy, callee: Any = None, down: Down | None = None
    ) -> None:
        self.provider, self.policy = provider, policy
        # What each attempt calls: the provider, or a view of it under its deadlines.
        self.callee = provider if callee is None else callee
        #: Whether its last call spent every retry (shared with hedge lanes' views of it).
        self.down = Down() if down is None else down

    @property
    def name(self) -> str:
        name: str = self.provider.name
        return name

    def admit(self, store: HealthStore) -> Admission:
        return store.admit(self.name)

    def can_serve(self, request: Request) -> BaseException | None:
        """Why the provider cannot take ``request`` at all (skipped without a request), or None.

        A request with tools needs a provider that takes them: one whose
        ``supports_tools`` is false (``HTTPFallback`` by default, the coding-agent
        CLIs) is skipped with ``ToolsUnsupported`` (absent means it does). A request
        that surely cannot fit the provider's context window is skipped with
        ``ContextWindowExceeded`` (:func:`too_long`).
        """
        if request.tools and not getattr(self.provider, "supports_tools", True):
            return ToolsUnsupported("skipped: this provider cannot take tools", provider=self.name)
        return too_long(self.provider, request)

    async def run_in(self, run: Run, request: Request, via: Via) -> Result | BaseException:
        """Try the provider (and retry it); a Result, or the error to hand over with.

        The health store hears once per call, how its last attempt ended
        (:func:`~orchestrator.engine.attempt.report_call`), not once per attempt.
        A cancelled call tells it nothing. A request the provider cannot take
        (:meth:`can_serve`) is not sent: judged here, after the hand-over hooks
        (so a request ``before_fallback`` shortened is judged as it will be sent)
        and inside a hedge's lane too. Then its limits and budgets are reserved
        (:mod:`~orchestrator.engine.capacity`) and, once the call ends, settled; each
        retry takes a reservation of its own (:func:`~orchestrator.engine.capacity.again`).
        """
        unfit = self.can_serve(request)
        ticket = capacity.admit(run, self.provider, request) if unfit is None else None
        if isinstance(ticket, capacity.Want):  # a round trip to the store, or a wait
            ticket = await capacity.admit_waiting(run, self.name, ticket)
        if isinstance(ticket, BaseException):
            unfit, ticket = ticket, None  # at a limit or over a budget: skipped, or the run ends
        if unfit is not None:
            return run.leave(self.name, skip(run, self.name, unfit))
        # What the agent's order reads (calls in flight, latency): None for most orders.
        name, router = self.name, run.agent.router
        if router.counts:
            call_began(run, name)
        outcome: Result | BaseException | None = None
        since = len(run.log.attempts)
        held = None if ticket is None else (ticket, since)  # what its retries renew
        try:
            if via == "again":
                outcome = await self._again(run, request, held)
            else:  # the first attempt and, if it failed and may be retried now, the retries
                outcome = await attempt(run, self.callee, request, 1, self.policy, via == "probe")
                if self._retries_now(outcome, run, via):
                    outcome = await self._retry(run, request, outcome, via, held)
        except asyncio.CancelledError:
            run.log.verdict = None
            raise
        finally:
            report_call(run, name)
            if router.ended is not None:
                router.ended(run, name, outcome)
            if ticket is not None:
                pending = capacity.settle(run, ticket, since) if ticket.counts else ticket.release()
                if pending is not None:  # a shared store's round trip
                    await pending
        self.down.after(self.policy, outcome, run.log.attempts[-1].attempt_number, run)
        if isinstance(outcome, Result):
            return outcome
        made = run.log.attempts[-1].attempt_number
        if via != "probe" and made <= self.policy.max_retries and self._retried_last(run, outcome):
            run.deferred.append(Deferred(self.name, made, outcome))
        return run.leave(self.name, outcome)

    async def _again(self, run: Run, request: Request, held: Held | None) -> Result | BaseException:
        """The retries that waited for the later children to fail (:class:`Deferred`)."""
        later = next(d for d in run.deferred if d.name == self.name)
        run.deferred.remove(later)
        run.log.note = "retried last: the later children failed first"
        return await retry(
            run,
            self.callee,
            request,
            later.error,
            self.policy,
            last_resort=False,
            made=later.made,
            held=held,
        )

    def _retried_last(self, run: Run, error: BaseException) -> bool:
        return run.retryable(error, self.policy) and retries_later(run, error, self.policy)

    async def _retry(
        self, run: Run, request: Request, error: BaseException, via: Via, held: Held | None
    ) -> Result | BaseException:
        """The retries of a first attempt that failed with ``error``."""
        last_resort = via == "last_resort"
        policy = self.policy
        return await retry(
            run, self.callee, request, error, policy, last_resort=last_resort, held=held
        )

    def _retries_now(
        self, outcome: Result | BaseException, run: Run, via: Via
    ) -> TypeGuard[BaseException]:
        """Whether the first attempt's ``outcome`` is a failure retried now, on this child."""
        policy = self.policy
        # A half-open probe is one request, never retried: the circuit decides on it.
        return (
            not isinstance(outcome, Result)
            and policy.max_retries > 0
            and via != "probe"
            and run.retryable(outcome, policy)
            and not retries_later(run, outcome, policy)
            and not (policy.probe_when_down and self.down.is_down and run.later)
        )


class Down:
    """Whether a provider is down: its last call spent every retry on errors that would
    have been retried. While it is, each call gives it one attempt (a probe), no retries
    (``RetryPolicy.probe_when_down``): the chain answers from the next child at once and
    never hammers a provider in an outage; its first success brings the retries back."""

    __slots__ = ("is_down",)

    def __init__(self) -> None:
        self.is_down = False

    def after(
        self, policy: RetryPolicy, outcome: Result | BaseException, made: int, run: Run
    ) -> None:
        """Learn from a call that ended with ``outcome`` after ``made`` attempts."""
        if isinstance(outcome, Result):
            self.is_down = False
        elif policy.probe_when_down and run.retryable(outcome, policy):
            spent = made > policy.max_retries or self.is_down
            self.is_down = spent and not retries_later(run, outcome, policy)


@dataclass(frozen=True, slots=True)
class Deferred:
    """A provider whose retries wait until the later children failed (a timeout:
    ``retried_last``): its name, the attempts it made, and its last error."""

    name: str
    made: int
    error: BaseException


async def come_back(run: Run, prev: str, error: BaseException) -> Result | BaseException:
    """Every later child failed: spend the retries that waited for them (timeouts,
    ``retried_last``), in the order the children were tried; a Result or the last error."""
    run.later = False
    names = [m.name for m in run.members]
    for later in list(run.deferred):
        outcome, _ = await run.next_child(names.index(later.name), prev, error, "again")
        if isinstance(outcome, Result):
            return outcome
        error, prev = outcome, later.name
    return error


async def rescue(
    run: Run,
    called: bool,
    skipped: dict[int, tuple[BaseException, float]],
    prev: str | None,
    last_error: BaseException | None,
) -> Result | None:
    """After every child failed or was skipped: the retries that waited for the later
    children (:func:`come_back`), or the last resort when every circuit was open
    (:func:`last_resort`); a Result, or None when neither answered."""
    if run.deferred and last_error is not None and prev is not None:
        back = await come_back(run, prev, last_error)
        if isinstance(back, Result):
            return back
    if not called and skipped:
        last = await last_resort(run, skipped)
        if isinstance(last, Result):
            return last
    return None


async def last_resort(
    run: Run, skipped: dict[int, tuple[BaseException, float]]
) -> Result | BaseException | None:
    """Every circuit is open: try the child whose cooldown ends first, with its retries.

    Rather than fail without a single request. The traffic is bounded: each
    provider takes one last-resort call at a time (``HealthStore.last_resort``);
    when every slot is taken the run fails fast (``None``) without a request.
    """
    store = run.agent.health_store
    assert store is not None
    for idx in sorted(skipped, key=lambda i: skipped[i][1]):
        name = run.members[idx].name
        if not store.last_resort(name):
            continue
        # The hand-over (and its redaction) is from the child just before it.
        before = run.members[idx - 1].name if idx > 0 else None
        run.log.note = "every circuit open: tried the one whose cooldown ends first"
        outcome: Result | BaseException | None = None
        try:
            error = skipped[idx - 1][0] if idx else None
            outcome, _ = await run.next_child(idx, before, error, "last_resort")
        finally:
            store.end_last_resort(name, succeeded=isinstance(outcome, Result))
        return outcome
    run.log.amend_last(note="every circuit open and each already has its last-resort call")
    return None


def too_long(provider: Any, request: Request) -> ContextWindowExceeded | None:
    """The error for a request that surely cannot fit ``provider.context_window`` (tokens,
    when it has one), or None. ``provider.window_counts_output`` False: the window holds
    the input only. The estimate never over-counts (:mod:`orchestrator.tokens`)."""
    window = getattr(provider, "context_window", None)
    if window is None:
        return None
    counts_output = getattr(provider, "window_counts_output", True)
    if fits(request, window, counts_output=counts_output):
        return None
    need = input_tokens_at_least(request)
    reserve = f" + max_tokens {request.max_tokens}" if counts_output and request.max_tokens else ""
    return ContextWindowExceeded(
        f"skipped: the request needs at least {need} input tokens{reserve}, "
        f"over the context window of {window} tokens",
        provider=provider.name,
    )


class ChainChild:
    """A nested FallbackAgent: an inner run within the outer one's deadline and delivery.

    Never admitted or retried as a whole (its own children are); its attempts
    join the outer run's, and the outer ``accept`` judges its answer too.
    """

    __slots__ = ("agent",)

    def __init__(self, agent: FallbackAgent) -> None:
        self.agent = agent

    @property
    def name(self) -> str:
        return self.agent.name

    def admit(self, store: HealthStore) -> None:
        return None

    async def run_in(self, run: Run, request: Request, via: Via) -> Result | BaseException:
        """Run the inner chain; a Result, or its FallbackError to hand over with."""
        inner = Run.start(self.agent, request, run.schema, None, run.delivery, within=run)
        router = run.agent.router
        if router.counts:
            call_began(run, self.name)
        outcome: Result | BaseException | None = None
        outer = capacity.nested(run)  # its calls count against this chain's budget too
        try:
            outcome = result = await inner.execute(counted_by=run.agent.health_store)
        except (FallbackError, RateLimited) as e:  # RateLimited: all its children at capacity
            outcome = e
            return run.leave(self.name, e)
        finally:
            capacity.unnested(outer)
            run.log.attempts.extend(inner.log.attempts)
            run.arm = run.arm or inner.arm  # an inner split's arm is the call's
            if router.ended is not None:
                router.ended(run, self.name, outcome, inner)
        if run.agent.accept is not None and not result.stopped:
            refused = await self._outer_accept(run, result)
            if refused is not None:
                return refused
        return Result(
            result.text,
            result.handled_by,
            tuple(run.log.attempts),
            run.elapsed(),
            result.value,
            result.model,
            result.stopped,
            result.best_effort,
            result.tool_calls,
            run.order,
            run.arm,
        )

    async def _outer_accept(self, run: Run, result: Result) -> BaseException | None:
        """The outer chain's ``accept`` also judges the answer (as if the chain were flat)."""
        assert run.agent.accept is not None
        if await accepts(run.agent.accept, result):
            return None
        error = Rejected(
            "the accept check refused the reply", provider=result.handled_by or self.name
        )
        run.log.amend_last(error=error, reason="rejected")
        return run.leave(self.name, error)
