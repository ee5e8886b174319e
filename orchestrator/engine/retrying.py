"""Retrying one provider: named stop conditions and the tenacity loop around its attempts.

Each rule that ends the retries is a tenacity stop condition of its own, combined
with ``|`` (``stop_after_attempt(3) | stop_before_deadline(...) | ...``), and
each carries the ``note`` the last attempt gets when it is the one that fired.
The loop runs only after a first attempt failed: a success never builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, RetryCallState
from tenacity.stop import stop_all, stop_any, stop_base

from orchestrator import events
from orchestrator.engine import capacity
from orchestrator.engine.attempt import attempt, skip, watch_hook
from orchestrator.errors import HookError, InvalidOutput
from orchestrator.types import Result

if TYPE_CHECKING:
    from orchestrator.engine.run import Run
    from orchestrator.health import HealthStore
    from orchestrator.policy import RetryPolicy
    from orchestrator.types import Request

#: A call's reservation (:mod:`~orchestrator.engine.capacity`) and the index in the run's
#: log of the first attempt it is for.
Held = tuple["capacity.Ticket", int]

__all__ = [
    "Held",
    "StopCondition",
    "retries_later",
    "retry",
    "stop_after_attempt",
    "stop_before_deadline",
    "stop_first_of",
    "stop_if_budget_empty",
    "stop_if_circuit_open",
    "stop_if_schema_retries_spent",
]


class StopCondition(stop_base):
    """A tenacity stop condition that can say why it stopped.

    ``note`` is what the last attempt records when this condition ends the
    retries (``None``: the attempt numbers already say it). ``spends`` marks a
    condition that takes something (a budget token) when it lets a retry go:
    it must be checked last, so that a retry always follows what it took.
    """

    note: str | None = None
    spends = False

    def __or__(self, other: stop_base) -> stop_first_of:
        if not isinstance(other, StopCondition):
            return NotImplemented
        return stop_first_of(self, other)

    def __and__(self, other: stop_base) -> stop_all:
        if self.spends or getattr(other, "spends", False):
            raise TypeError(f"{self!r} & {other!r}: a condition that spends only combines with |")
        return super().__and__(other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class stop_first_of(stop_any, StopCondition):
    """tenacity's ``stop_any``, checked left to right, remembering which condition fired."""

    conditions: tuple[StopCondition, ...]

    def __init__(self, *conditions: StopCondition) -> None:
        flat: list[StopCondition] = []
        for c in conditions:
            flat.extend(c.conditions if isinstance(c, stop_first_of) else (c,))
        for c in flat[:-1]:
            if c.spends:
                raise ValueError(f"{c!r} spends when it lets a retry go: it must come last")
        super().__init__(*flat)
        self.conditions = tuple(flat)
        self.spends = flat[-1].spends
        #: The condition that stopped the retries (``None`` while none has).
        self.stopped_by: StopCondition | None = None

    def __call__(self, retry_state: RetryCallState) -> bool:
        for c in self.conditions:
            if c(retry_state):
                self.stopped_by = c
                return True
        return False

    def __repr__(self) -> str:
        return " | ".join(map(repr, self.conditions))


class stop_after_attempt(StopCondition):
    """Stop once ``max_attempt_number`` attempts (the first one included) were made."""

    def __init__(self, max_attempt_number: int) -> None:
        self.max_attempt_number = max_attempt_number

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.attempt_number >= self.max_attempt_number

    def __repr__(self) -> str:
        return f"stop_after_attempt({self.max_attempt_number})"


class stop_if_schema_retries_spent(StopCondition):
    """Stop once more replies were invalid than ``schema_retries`` allows."""

    note = "schema_retries spent"

    def __init__(self, schema_retries: int, invalid_replies: Callable[[], int]) -> None:
        self.schema_retries, self.invalid_replies = schema_retries, invalid_replies

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.invalid_replies() > self.schema_retries


class stop_before_deadline(StopCondition):
    """Stop when the upcoming backoff would end at or past ``deadline`` (on ``now``'s clock).

    tenacity's ``stop_before_delay``, measured against the run's deadline rather
    than from the first attempt: no sleep starts that would outlive the caller.
    """

    note = "backoff would end past the run's deadline"

    def __init__(self, deadline: float, now: Callable[[], float]) -> None:
        self.deadline, self.now = deadline, now

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.now() + retry_state.upcoming_sleep >= self.deadline


class stop_if_circuit_open(StopCondition):
    """Stop when ``provider``'s circuit is no longer closed: retries would feed a failing one."""

    note = "circuit open: no more retries"

    def __init__(self, store: HealthStore, provider: str) -> None:
        self.store, self.provider = store, provider

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.store.snapshot(self.provider).state != "closed"


class stop_if_budget_empty(StopCondition):
    """Stop when the store's retry budget is empty; otherwise take one token for this retry.

    The store's check is atomic (one process or many share the budget), so the
    token is taken by the check itself. That is why this condition ``spends``
    and comes last in a ``|`` chain: it is reached only when every other
    condition let the retry go, so the token it takes is the retry's own.
    """

    note = "retry budget empty"
    spends = True

    def __init__(self, store: HealthStore) -> None:
        self.store = store

    def __call__(self, retry_state: RetryCallState) -> bool:
        return not self.store.try_acquire_retry()


def stop_conditions(
    run: Run, name: str, policy: RetryPolicy, *, last_resort: bool, since: int, made: int = 1
) -> stop_first_of:
    """Everything that ends the retries of ``name`` in ``run``, in the order it is checked.

    ``since`` is the index of the child's first attempt in the run's log; ``made`` the
    attempts it made before (more than 1 when its retries waited for later children).
    """
    agent = run.agent
    log = run.log
    stop = stop_after_attempt(policy.max_retries + 2 - made) | stop_if_schema_retries_spent(
        agent.schema_retries, lambda: log.count(InvalidOutput, since)
    )
    if run.deadline is not None:
        stop |= stop_before_deadline(run.deadline, agent.clock.now)
    store = agent.health_store
    if store is not None:
        if not last_resort:  # a last-resort call is to an open circuit by design
            stop |= stop_if_circuit_open(store, name)
        stop |= stop_if_budget_empty(store)
    return stop


def retries_later(run: Run, error: BaseException, policy: RetryPolicy) -> bool:
    """Whether ``error``'s retries wait until the later children failed: a later child can
    take the call and ``error``'s class is ``retried_last`` (a timeout), policy permitting."""
    return run.later and policy.retry_timeouts_last and run.agent.classifier.retried_last(error)


async def retry(
    run: Run,
    child: Any,
    request: Request,
    first: BaseException,
    policy: RetryPolicy,
    *,
    last_resort: bool,
    made: int = 1,
    held: Held | None = None,
) -> Result | BaseException:
    """Retry ``child`` after its attempt number ``made`` failed with ``first``; the Result
    or the last error. ``held``: the call's reservation; each retry sent takes its own."""
    since = len(run.log.attempts) - 1  # the first attempt, already in the log
    stop = stop_conditions(run, child.name, policy, last_resort=last_resort, since=since, made=made)
    ticket, taken = held if held is not None else (None, 0)
    try:
        async for try_ in _retrying(run, child.name, policy, stop, made - 1):
            with try_:
                n = try_.retry_state.attempt_number
                if n == 1:
                    raise first  # replay the first attempt's outcome into tenacity
                if ticket is not None and len(run.log.attempts) > taken:  # its request went
                    got = await capacity.again(run, ticket, taken)
                    if isinstance(got, BaseException):  # no slot: skipped, as a first call is
                        return skip(run, child.name, got)
                    ticket, taken = got, len(run.log.attempts)
                outcome = await attempt(run, child, request, n + made - 1, policy)
                if isinstance(outcome, Result):
                    return outcome
                raise outcome
    except HookError:
        raise
    except Exception as e:
        fired = stop.stopped_by
        if fired is not None and fired.note is not None:
            # Why the retries ended early (deadline, budget, open circuit) belongs on the last try.
            run.log.amend_last(note=fired.note)
        return e
    finally:
        if ticket is not None and held is not None and ticket is not held[0]:
            pending = capacity.settle(run, ticket, taken)  # the retries' own reservation
            if pending is not None:
                await pending
    raise AssertionError("unreachable: tenacity ended without an outcome")  # pragma: no cover


def _retrying(
    run: Run, name: str, policy: RetryPolicy, stop: stop_base, offset: int
) -> AsyncRetrying:
    """tenacity's loop for one provider: the policy's wait, ``stop``, and each retry announced
    (``offset``: attempts made before tenacity's first)."""
    agent = run.agent

    def retryable(state: RetryCallState) -> bool:
        err = state.outcome.exception() if state.outcome is not None else None
        return (
            err is not None and run.retryable(err, policy) and not retries_later(run, err, policy)
        )

    async def before_sleep(state: RetryCallState) -> None:
        run.decided("retry")  # the failed attempt's event and span say what follows it
        err = state.outcome.exception() if state.outcome is not None else None
        n, delay = state.attempt_number + offset, state.upcoming_sleep
        events.emit(
            "info",
            "retry_scheduled",
            agent=agent.name,
            child=name,
            attempt=n,
            delay=delay,
            **events.error_fields(err),
        )
        if agent.on_retry is not None and err is not None:
            await watch_hook(run, "on_retry", agent.on_retry, name, n, err, delay)

    async def sleep(delay: float) -> None:
        if delay > 0:  # strategy "none" means no wait at all, not sleep(0)
            await agent.clock.sleep(delay)

    return AsyncRetrying(
        sleep=sleep,
        stop=stop,
        wait=policy.wait_strategy(agent.rng),
        retry=retryable,
        before_sleep=before_sleep,
        reraise=True,
    )
