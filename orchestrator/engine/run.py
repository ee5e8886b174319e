"""One run of a FallbackAgent: the loop over children, attempts, retries and hand-overs.

Hot path: a first attempt that succeeds costs one provider call, one Attempt
and one Result; tenacity is only set up when a retry is actually needed.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, RetryCallState

from orchestrator import events
from orchestrator.engine.attempt import PREFIX_CHARS, AttemptRunner, call_hook, schema_json
from orchestrator.engine.classify import describe, reason_of
from orchestrator.errors import (
    FallbackError,
    HookError,
    InvalidOutput,
    Rejected,
)
from orchestrator.policy import RetryPolicy
from orchestrator.types import Message, Request, Result, Stop
from orchestrator.units import seconds_or_none

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent

__all__ = ["Run", "call_hook"]


class _DeadlinePassed(Exception):
    """Internal: the run's deadline passed; end the run with FallbackError."""


class Run(AttemptRunner):
    """One ``FallbackAgent.run`` (or a nested chain inside one): children, retries, hand-overs."""

    @classmethod
    def start(
        cls,
        agent: FallbackAgent,
        request: Request,
        schema: Any,
        timeout: float | timedelta | None,
        **kwargs: Any,
    ) -> Run:
        limit = agent.timeout if timeout is None else seconds_or_none(timeout, "timeout")
        if schema is not None:
            # Built (and cached) before the clock starts: the first use imports pydantic.
            request = request.replace(
                json_schema=schema_json(schema),
                schema_name=getattr(schema, "__name__", "Output"),
            )
        deadline = None if limit is None else agent.clock.now() + limit
        return cls(agent, request, schema, deadline, **kwargs)

    # -- the chain ---------------------------------------------------------

    async def execute(self, *, counted_by: object = None) -> Result:
        """Try every child in order; the first success wins.

        ``counted_by`` is the outer chain's health store when this chain runs
        nested inside it: that store already counted the call for its budget.
        """
        agent = self.agent
        store = agent.health_store
        if store is not None and store is not counted_by:
            store.record_request()
        skipped: dict[int, tuple[BaseException, float]] = {}  # circuit open: error, open until
        called = False
        last_error: BaseException | None = None
        prev: str | None = None
        try:
            for idx, child in enumerate(agent.children):
                if store is not None and not getattr(child, "_is_chain", False):
                    adm = store.admit(child.name)
                    if not adm.allowed:
                        # A skipped child hands over like a failed one (reason circuit_open),
                        # so redaction and on_fallback still apply to the next child.
                        last_error = self._skip(child.name, adm.open_until)
                        skipped[idx] = (last_error, adm.open_until or 0.0)
                        prev = child.name
                        continue
                    if adm.probe:
                        self._note = "half-open probe"
                        self.probing = child.name
                outcome = await self._next_child(idx, prev, last_error)
                self.probing = None
                if not isinstance(outcome, BaseException):
                    return self._succeeded(outcome)
                called, last_error, prev = True, outcome, child.name
            if not called and skipped:
                last = await self._last_resort(skipped)
                if isinstance(last, Result):
                    return self._succeeded(last)
        except _DeadlinePassed:
            pass
        return await self._all_failed()

    async def _last_resort(
        self, skipped: dict[int, tuple[BaseException, float]]
    ) -> Result | BaseException | None:
        """Every circuit is open: try the child whose cooldown ends first, with its retries.

        Rather than fail without a single request. The traffic is bounded: each
        provider takes one last-resort call at a time (``HealthStore.last_resort``);
        when every slot is taken the run fails fast (``None``) without a request.
        """
        agent = self.agent
        store = agent.health_store
        assert store is not None
        for idx in sorted(skipped, key=lambda i: skipped[i][1]):
            name = agent.children[idx].name
            if not store.last_resort(name):
                continue
            # The hand-over (and its redaction) is from the child just before it.
            before = agent.children[idx - 1].name if idx > 0 else None
            self._note = "every circuit open: tried the one whose cooldown ends first"
            self.last_resort = name
            outcome: Result | BaseException | None = None
            try:
                outcome = await self._next_child(idx, before, skipped[idx - 1][0] if idx else None)
            finally:
                self.last_resort = None
                store.end_last_resort(name, succeeded=isinstance(outcome, Result))
            return outcome
        self.attempts[-1] = replace(
            self.attempts[-1], note="every circuit open and each already has its last-resort call"
        )
        return None

    async def _next_child(
        self, idx: int, prev: str | None, last_error: BaseException | None
    ) -> Result | BaseException:
        """Hand over to child ``idx`` (hooks first) and try it; returns a Result or its error."""
        child = self.agent.children[idx]
        request = self.request
        if prev is not None and last_error is not None:
            decision = await self._hand_over(prev, child.name, last_error)
            if isinstance(decision, Stop):
                return self._stopped(decision)
            request = decision
        return await self._try_child(idx, child, request)

    def _check_deadline(self) -> None:
        if self.deadline is not None and self.agent.clock.now() >= self.deadline:
            raise _DeadlinePassed

    async def _hand_over(self, frm: str, to: str, error: BaseException) -> Request | Stop:
        agent = self.agent
        self._check_deadline()
        reason = reason_of(error)
        request = self.request
        if agent.before_fallback is not None and self.delivered and self.mode == "continue":
            # The streamed text leaves for the next provider too: show it to the hook as the
            # trailing assistant message, so it can be redacted like the rest.
            prefix = "".join(self.delivered)
            request = request.replace(
                messages=[*request.messages, Message("assistant", prefix)],
                metadata={**request.metadata, PREFIX_CHARS: len(prefix)},
            )
        if agent.before_fallback is not None:
            # A deep copy: redaction must never change the caller's request.
            decision = await call_hook(
                "before_fallback", agent.before_fallback, copy.deepcopy(request), reason
            )
            if isinstance(decision, Stop):
                return decision
            if not isinstance(decision, Request):
                raise HookError(
                    "before_fallback",
                    TypeError(f"returned {type(decision).__name__}; return a Request or Stop"),
                )
            request = decision
        events.emit(
            "info",
            "fallback",
            agent=agent.name,
            child=frm,
            to=to,
            reason=reason,
            **events.error_fields(error),
        )
        if agent.on_fallback is not None:
            extra = (reason,) if agent.on_fallback_wants_reason else ()
            await call_hook("on_fallback", agent.on_fallback, frm, to, error, *extra)
        self._check_deadline()  # the hooks may have used up the budget: do not start the child
        handover = {
            "reason": reason,
            "attempts": [
                {
                    "agent": a.agent,
                    "attempt_number": a.attempt_number,
                    "reason": a.reason,
                    **(describe(a.error) if a.error is not None else {}),
                }
                for a in self.attempts
            ],
        }
        return request.replace(metadata={**request.metadata, "handover": handover})

    # -- one child -----------------------------------------------------------

    async def _try_child(self, idx: int, child: Any, request: Request) -> Result | BaseException:
        if getattr(child, "_is_chain", False):
            return await self._try_nested(child, request)
        policy = self.agent.policies[idx]
        outcome = await self._attempt(child, request, 1, policy)
        if isinstance(outcome, Result):
            return outcome
        # A half-open probe is one request, never retried: the circuit decides on it.
        if (
            policy.max_retries > 0
            and self.probing != child.name
            and self._retryable(outcome, policy)
        ):
            outcome = await self._retry(child, request, outcome, policy)
            if isinstance(outcome, Result):
                return outcome
        return self._leave(child.name, outcome)

    async def _try_nested(self, child: FallbackAgent, request: Request) -> Result | BaseException:
        inner = Run.start(
            child,
            request,
            self.schema,
            None,
            sink=self.sink,
            mode=self.mode,
            delivered=self.delivered,
        )
        if self.deadline is not None and (inner.deadline is None or self.deadline < inner.deadline):
            inner.deadline = self.deadline
        if self.attempt_limit is not None and (
            inner.attempt_limit is None or self.attempt_limit < inner.attempt_limit
        ):
            inner.attempt_limit = self.attempt_limit
        try:
            result = await inner.execute(counted_by=self.agent.health_store)
        except FallbackError as e:
            self.attempts.extend(inner.attempts)
            return self._leave(child.name, e)
        except BaseException:
            self.attempts.extend(inner.attempts)
            raise
        self.attempts.extend(inner.attempts)
        if self.agent.accept is not None and not result.stopped:
            refused = await self._outer_accept(child.name, result)
            if refused is not None:
                return refused
        return Result(
            result.text,
            result.handled_by,
            tuple(self.attempts),
            self._elapsed(),
            result.value,
            result.model,
            result.stopped,
            result.best_effort,
        )

    async def _outer_accept(self, name: str, result: Result) -> BaseException | None:
        """This chain's ``accept`` also judges a nested chain's answer (as if it were flat)."""
        assert self.agent.accept is not None
        if await call_hook("accept", self.agent.accept, result):
            return None
        leaf = result.handled_by or name
        error = Rejected("the accept check refused the reply", provider=leaf)
        self.attempts[-1] = replace(self.attempts[-1], error=error, reason="rejected")
        return self._leave(name, error)

    def _retryable(self, error: BaseException, policy: RetryPolicy) -> bool:
        if self.deadline_hit or (self.delivered and self.mode == "raise"):
            return False
        if self.delivered and isinstance(error, Rejected):
            return False
        if isinstance(error, InvalidOutput) and self.agent.schema_retries == 0:
            return False
        return self.agent.classifier.retryable(error) and policy.allows_retry_after(error)

    def _leave(self, name: str, error: BaseException) -> BaseException:
        """The child is done with ``error``: hand over (return it) or stop (raise it)."""
        if self.deadline_hit:
            raise _DeadlinePassed
        if self.delivered and (self.mode == "raise" or isinstance(error, Rejected)):
            # Text already reached the consumer: it cannot be unsent, so a refused complete
            # reply is never used as a prefix to continue from.
            events.emit(
                "warning",
                "terminal_error",
                agent=self.agent.name,
                child=name,
                reason="mid_stream",
                **events.error_fields(error),
            )
            raise error
        if not self.agent.classifier.hands_over(error):
            events.emit(
                "warning",
                "terminal_error",
                agent=self.agent.name,
                child=name,
                **events.error_fields(error),
            )
            raise error
        return error

    async def _retry(
        self, child: Any, request: Request, first: BaseException, policy: RetryPolicy
    ) -> Result | BaseException:
        agent = self.agent
        clock = agent.clock
        invalid = 1 if isinstance(first, InvalidOutput) else 0

        def retry(state: RetryCallState) -> bool:
            err = state.outcome.exception() if state.outcome is not None else None
            return err is not None and self._retryable(err, policy)

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number > policy.max_retries:
                return True
            if invalid > agent.schema_retries:
                return self._set_note("schema_retries spent")
            if self.deadline is not None and clock.now() + state.upcoming_sleep >= self.deadline:
                return self._set_note("backoff would end past the run's deadline")
            store = agent.health_store
            if store is not None:
                # A last-resort call is to an open circuit by design: it keeps its retries.
                if self.last_resort != child.name and store.snapshot(child.name).state != "closed":
                    return self._set_note("circuit open: no more retries")
                if not store.try_acquire_retry():
                    return self._set_note("retry budget empty")
            return False

        async def before_sleep(state: RetryCallState) -> None:
            err = state.outcome.exception() if state.outcome is not None else None
            delay = state.upcoming_sleep
            events.emit(
                "info",
                "retry_scheduled",
                agent=agent.name,
                child=child.name,
                attempt=state.attempt_number,
                delay=delay,
                **events.error_fields(err),
            )
            if agent.on_retry is not None and err is not None:
                await call_hook(
                    "on_retry", agent.on_retry, child.name, state.attempt_number, err, delay
                )

        async def sleep(delay: float) -> None:
            if delay > 0:  # strategy "none" means no wait at all, not sleep(0)
                await clock.sleep(delay)

        retrying = AsyncRetrying(
            sleep=sleep,
            stop=stop,
            wait=policy.wait_strategy(agent.rng),
            retry=retry,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    n = attempt.retry_state.attempt_number
                    if n == 1:
                        raise first  # replay the first attempt's outcome into tenacity
                    outcome = await self._attempt(child, request, n, policy)
                    if isinstance(outcome, Result):
                        return outcome
                    if isinstance(outcome, InvalidOutput):
                        invalid += 1
                    raise outcome
        except HookError:
            raise
        except Exception as e:
            if self._note is not None and self.attempts:
                # Why the retries ended (deadline, budget, open circuit) belongs on the last try.
                self.attempts[-1] = replace(self.attempts[-1], note=self._note)
                self._note = None
            return e
        raise AssertionError("unreachable: tenacity ended without an outcome")  # pragma: no cover

    def _set_note(self, note: str) -> bool:
        self._note = note
        return True

    # -- endings -------------------------------------------------------------

    def _succeeded(self, result: Result) -> Result:
        if result.stopped is not None:
            return result  # run_stopped was emitted already
        events.emit(
            "info",
            "run_succeeded",
            agent=self.agent.name,
            handled_by=result.handled_by,
            attempts=len(result.attempts),
            latency=result.latency,
        )
        return result

    def _push(self, text: str) -> None:
        """A text the engine itself produced (Stop, best_effort) reaches a stream's consumer."""
        if self.sink is not None and text:
            self.delivered.append(text)
            self.sink.put_nowait(text)

    def _stopped(self, stop: Stop) -> Result:
        self._push(stop.text)
        events.emit("info", "run_stopped", agent=self.agent.name, reason=stop.reason)
        return Result(stop.text, None, tuple(self.attempts), self._elapsed(), stopped=stop)

    async def _all_failed(self) -> Result:
        agent = self.agent
        errors = [a.error for a in self.attempts if a.error is not None]
        events.emit(
            "warning",
            "run_failed",
            agent=agent.name,
            attempts=len(self.attempts),
            deadline=self.deadline_hit,
        )
        if agent.on_all_failed is not None:
            await call_hook("on_all_failed", agent.on_all_failed, errors)
        if agent.best_effort is not None:
            text = await call_hook("best_effort", agent.best_effort, tuple(self.attempts))
            if text is not None:
                self._push(str(text))
                return Result(
                    str(text), None, tuple(self.attempts), self._elapsed(), best_effort=True
                )
        raise FallbackError(self.attempts, name=agent.name)
