"""One run of a FallbackAgent: the loop over children, attempts, retries and hand-overs.

Hot path: a first attempt that succeeds costs one provider call, one Attempt
and one Result; tenacity is only set up when a retry is actually needed.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, RetryCallState

from orchestrator import events
from orchestrator._attempt import Attempt
from orchestrator._classify import describe, reason_of
from orchestrator._request import Message, Request, Response
from orchestrator._result import Result, Stop
from orchestrator.errors import (
    CircuitOpen,
    FallbackError,
    HookError,
    InvalidOutput,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    Rejected,
    TerminalError,
)
from orchestrator.policy import RetryPolicy, seconds

if TYPE_CHECKING:
    import asyncio

    from orchestrator.fallback import FallbackAgent

__all__ = ["Run", "call_hook"]


async def call_hook(name: str, hook: Callable[..., Any], *args: Any) -> Any:
    """Call a sync or async user hook; anything it raises becomes ``HookError``."""
    try:
        out = hook(*args)
        if inspect.isawaitable(out):
            out = await out
    except Exception as e:
        events.emit("error", "hook_failed", hook=name, error_type=type(e).__name__)
        raise HookError(name, e) from e
    return out


@lru_cache(maxsize=256)
def _schema_adapter(schema: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


class _DeadlinePassed(Exception):
    """Internal: the run's deadline passed; end the run with FallbackError."""


class Run:
    """The state of one ``FallbackAgent.run`` (or of one nested chain inside it)."""

    __slots__ = (
        "_note",
        "agent",
        "attempts",
        "deadline",
        "deadline_hit",
        "delivered",
        "mode",
        "request",
        "schema",
        "sink",
        "started",
    )

    def __init__(
        self,
        agent: FallbackAgent,
        request: Request,
        schema: Any,
        deadline: float | None,
        *,
        sink: asyncio.Queue[str | None] | None = None,
        mode: str = "raise",
        delivered: list[str] | None = None,
    ) -> None:
        self.agent = agent
        self.request = request
        self.schema = schema
        self.deadline = deadline
        self.started = agent.clock.now()
        self.attempts: list[Attempt] = []
        self.sink = sink
        self.mode = mode
        self.delivered: list[str] = delivered if delivered is not None else []
        self.deadline_hit = False
        self._note: str | None = None

    @classmethod
    def start(
        cls,
        agent: FallbackAgent,
        request: Request,
        schema: Any,
        timeout: float | timedelta | None,
        **kwargs: Any,
    ) -> Run:
        limit = agent.timeout if timeout is None else seconds(timeout, "timeout")
        deadline = None if limit is None else agent.clock.now() + limit
        if schema is not None:
            adapter = _schema_adapter(schema)
            request = request.replace(
                json_schema=adapter.json_schema(),
                schema_name=getattr(schema, "__name__", "Output"),
            )
        return cls(agent, request, schema, deadline, **kwargs)

    # -- the chain ---------------------------------------------------------

    async def execute(self) -> Result:
        """Try every child in order; the first success wins."""
        agent = self.agent
        store = agent.health_store
        if store is not None:
            store.record_request()
        refused: list[tuple[int, float]] = []
        called = False
        last_error: BaseException | None = None
        prev: str | None = None
        try:
            for idx, child in enumerate(agent.children):
                if store is not None and not getattr(child, "_is_chain", False):
                    adm = store.admit(child.name)
                    if not adm.allowed:
                        self._skip(child.name, adm.open_until)
                        refused.append((idx, adm.open_until or 0.0))
                        continue
                outcome = await self._next_child(idx, prev, last_error)
                if not isinstance(outcome, BaseException):
                    return outcome
                called, last_error, prev = True, outcome, child.name
            if not called and refused:
                # Every circuit is open: try the one whose cooldown ends first, once.
                idx = min(refused, key=lambda r: r[1])[0]
                self._note = "every circuit open: tried the one whose cooldown ends first"
                outcome = await self._next_child(idx, None, None)
                if not isinstance(outcome, BaseException):
                    return outcome
        except _DeadlinePassed:
            pass
        return await self._all_failed()

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

    async def _hand_over(self, frm: str, to: str, error: BaseException) -> Request | Stop:
        agent = self.agent
        if self.deadline is not None and agent.clock.now() >= self.deadline:
            raise _DeadlinePassed
        reason = reason_of(error)
        request = self.request
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
            await call_hook("on_fallback", agent.on_fallback, frm, to, error)
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
        outcome = await self._attempt(child, request, 1)
        if isinstance(outcome, Result):
            return outcome
        policy = self.agent.policies[idx]
        if policy.max_retries > 0 and self._retryable(outcome, policy):
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
        try:
            result = await inner.execute()
        except FallbackError as e:
            self.attempts.extend(inner.attempts)
            return self._leave(child.name, e)
        except BaseException:
            self.attempts.extend(inner.attempts)
            raise
        self.attempts.extend(inner.attempts)
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

    def _retryable(self, error: BaseException, policy: RetryPolicy) -> bool:
        if self.deadline_hit or (self.delivered and self.mode == "raise"):
            return False
        if isinstance(error, InvalidOutput) and self.agent.schema_retries == 0:
            return False
        return self.agent.classifier.retryable(error) and policy.allows_retry_after(error)

    def _leave(self, name: str, error: BaseException) -> BaseException:
        """The child is done with ``error``: hand over (return it) or stop (raise it)."""
        if self.deadline_hit:
            raise _DeadlinePassed
        if self.delivered and self.mode == "raise":
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
            if store is not None and not store.try_acquire_retry():
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
                    outcome = await self._attempt(child, request, n)
                    if isinstance(outcome, Result):
                        return outcome
                    if isinstance(outcome, InvalidOutput):
                        invalid += 1
                    raise outcome
        except HookError:
            raise
        except Exception as e:
            if self._note is not None and self.attempts:
                last = self.attempts[-1]
                self.attempts[-1] = Attempt(
                    last.agent,
                    last.error,
                    last.attempt_number,
                    last.started_at,
                    last.duration,
                    last.reason,
                    last.usage,
                    last.cost_usd,
                    self._note,
                )
                self._note = None
            return e
        raise AssertionError("unreachable: tenacity ended without an outcome")  # pragma: no cover

    def _set_note(self, note: str) -> bool:
        self._note = note
        return True

    # -- one attempt -----------------------------------------------------------

    async def _attempt(self, child: Any, request: Request, number: int) -> Result | BaseException:
        """Call ``child`` once; record the Attempt; return a Result or the error."""
        agent = self.agent
        clock = agent.clock
        t0 = clock.now()
        wall = clock.wall()
        deadline = self.deadline
        if agent.attempt_timeout is not None:
            own = t0 + agent.attempt_timeout
            deadline = own if deadline is None or own < deadline else deadline
        if self.delivered and self.mode == "continue":
            request = request.replace(
                messages=[*request.messages, Message("assistant", "".join(self.delivered))]
            )
        response: Response | None = None
        error: BaseException | None = None
        try:
            if deadline is None:
                response = await self._call(child, request)
            else:
                cm = clock.timeout_at(deadline)
                try:
                    async with cm:
                        response = await self._call(child, request)
                except TimeoutError:
                    if not getattr(cm, "expired", lambda: False)():
                        raise
                    error = self._timeout_error(child.name, clock.now())
        except Exception as e:
            error = e
        duration = clock.now() - t0
        result: Result | None = None
        if response is not None:
            result, error = await self._check(child.name, response, number, wall, duration)
        if error is None and result is not None:
            return result
        assert error is not None
        self._record_failure(child.name, error, number, wall, duration, response)
        return error

    async def _call(self, child: Any, request: Request) -> Response:
        if self.sink is None:
            response = await child.complete(request)
        else:
            from orchestrator._stream import stream_call

            response = await stream_call(self, child, request)
        if not isinstance(response, Response):
            raise InvalidOutput(
                f"complete() returned {type(response).__name__}, expected Response",
                provider=child.name,
            )
        return response

    def _timeout_error(self, name: str, now: float) -> ProviderTimeout:
        if self.deadline is not None and now >= self.deadline:
            self.deadline_hit = True
            return ProviderTimeout("the run's deadline passed during this attempt", provider=name)
        return ProviderTimeout(
            f"no reply within attempt_timeout={self.agent.attempt_timeout}s", provider=name
        )

    async def _check(
        self, name: str, response: Response, number: int, wall: float, duration: float
    ) -> tuple[Result | None, BaseException | None]:
        """Validate a reply against ``schema`` and ``accept``; record the winning attempt."""
        text = response.text if not self.delivered else "".join(self.delivered)
        value = None
        if self.schema is not None:
            try:
                value = _schema_adapter(self.schema).validate_json(text)
            except Exception as e:
                where = "; ".join(
                    f"{'.'.join(map(str, err.get('loc', ())))}: {err.get('type')}"
                    for err in getattr(e, "errors", lambda: [])()[:3]
                )
                return None, InvalidOutput(
                    f"reply does not match schema {self.request.schema_name}"
                    + (f" ({where})" if where else ": not valid JSON"),
                    provider=name,
                )
        attempt = Attempt(
            name, None, number, wall, duration, None, response.usage, response.cost_usd, self._note
        )
        self._note = None
        attempts = (*self.attempts, attempt)
        result = Result(text, name, attempts, self._elapsed(), value, response.model)
        if self.agent.accept is not None and not await call_hook(
            "accept", self.agent.accept, result
        ):
            return None, Rejected("the accept check refused the reply", provider=name)
        self.attempts.append(attempt)
        store = self.agent.health_store
        if store is not None:
            store.record_success(name)
        events.emit(
            "debug",
            "attempt_succeeded",
            agent=self.agent.name,
            child=name,
            attempt=number,
            duration=duration,
        )
        return result, None

    def _record_failure(
        self,
        name: str,
        error: BaseException,
        number: int,
        wall: float,
        duration: float,
        response: Response | None,
    ) -> None:
        reason = "deadline" if self.deadline_hit else reason_of(error)
        usage = response.usage if response is not None else None
        cost = response.cost_usd if response is not None else None
        self.attempts.append(
            Attempt(name, error, number, wall, duration, reason, usage, cost, self._note)
        )
        self._note = None
        store = self.agent.health_store
        if store is not None and _counts_for_health(error):
            retry_after = error.retry_after if isinstance(error, RateLimited) else None
            store.record_failure(name, retry_after=retry_after)
        events.emit(
            "info",
            "attempt_failed",
            agent=self.agent.name,
            child=name,
            attempt=number,
            reason=reason,
            duration=duration,
            **events.error_fields(error),
        )

    def _skip(self, name: str, open_until: float | None) -> None:
        error = CircuitOpen("skipped: circuit open", provider=name)
        self.attempts.append(
            Attempt(
                name,
                error,
                0,
                self.agent.clock.wall(),
                0.0,
                "circuit_open",
                note=(f"open until {open_until:.3f}" if open_until else None),
            )
        )
        events.emit(
            "info",
            "attempt_failed",
            agent=self.agent.name,
            child=name,
            attempt=0,
            reason="circuit_open",
            **events.error_fields(error),
        )

    # -- endings -------------------------------------------------------------

    def _elapsed(self) -> float:
        return self.agent.clock.now() - self.started

    def _stopped(self, stop: Stop) -> Result:
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
                return Result(
                    str(text), None, tuple(self.attempts), self._elapsed(), best_effort=True
                )
        raise FallbackError(self.attempts, name=agent.name)


def _counts_for_health(error: BaseException) -> bool:
    """Only transient and unusable failures count toward a circuit; never terminal ones."""
    if isinstance(error, CircuitOpen | InvalidOutput | TerminalError | HookError | FallbackError):
        return False
    return isinstance(error, ProviderError | Exception)
