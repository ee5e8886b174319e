"""One attempt: call a child under its deadline, validate the reply, record the Attempt.

The base of :class:`orchestrator.engine.run.Run`; split out so each module holds
one concept (the chain loop there, the single call here).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from orchestrator import events
from orchestrator.engine.classify import reason_of
from orchestrator.errors import (
    CircuitOpen,
    HookError,
    InvalidOutput,
    ProviderTimeout,
    Rejected,
    TerminalError,
    meaning,
)
from orchestrator.types import Attempt, Message, Request, Response, Result

if TYPE_CHECKING:
    import asyncio

    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.policy import RetryPolicy

__all__ = ["PREFIX_CHARS", "AttemptRunner", "call_hook", "schema_adapter", "schema_json"]

#: Request metadata key: how many streamed chars the hand-over request already carries
#: as its trailing assistant message (so the hook's redaction of them is kept).
PREFIX_CHARS = "stream_prefix_chars"


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
def schema_adapter(schema: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


@lru_cache(maxsize=256)
def schema_json(schema: Any) -> dict[str, Any]:
    """The JSON schema providers are asked to follow (computed once per type)."""
    out: dict[str, Any] = schema_adapter(schema).json_schema()
    return out


class AttemptRunner:
    """State shared by a run and the single-attempt machinery."""

    __slots__ = (
        "_note",
        "agent",
        "attempt_limit",
        "attempts",
        "deadline",
        "deadline_hit",
        "delivered",
        "last_resort",
        "mode",
        "probing",
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
        # Per-attempt limit: the agent's own, or tighter when an outer chain imposes one.
        self.attempt_limit: float | None = agent.attempt_timeout
        # The child whose half-open probe this run holds (its outcome must be recorded).
        self.probing: str | None = None
        # The child this run calls although its circuit is open (every circuit was open).
        self.last_resort: str | None = None

    # -- one attempt -----------------------------------------------------------

    async def _attempt(
        self, child: Any, request: Request, number: int, policy: RetryPolicy
    ) -> Result | BaseException:
        """Call ``child`` once (``policy`` decides what its failure tells the health store)."""
        agent = self.agent
        clock = agent.clock
        t0 = clock.now()
        wall = clock.wall()
        deadline = self.deadline
        if self.attempt_limit is not None:
            own = t0 + self.attempt_limit
            deadline = own if deadline is None or own < deadline else deadline
        if self.delivered and self.mode == "continue":
            request = self._with_prefix(request)
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
        self._record_failure(child.name, error, number, wall, duration, response, policy)
        return error

    async def _call(self, child: Any, request: Request) -> Response:
        if self.sink is None:
            response = await child.complete(request)
        else:
            from orchestrator.engine.streaming import stream_call

            response = await stream_call(self, child, request)
        if not isinstance(response, Response):
            raise InvalidOutput(
                f"complete() returned {type(response).__name__}, expected Response",
                provider=child.name,
            )
        return response

    def _with_prefix(self, request: Request) -> Request:
        """Ask to continue from the text already streamed (sent as the assistant's prefix)."""
        text = "".join(self.delivered)
        seen = request.metadata.get(PREFIX_CHARS)
        msgs = list(request.messages)
        if isinstance(seen, int) and msgs and msgs[-1].role == "assistant":
            # before_fallback saw (and may have redacted) the prefix up to ``seen`` chars:
            # keep its version and add only what was streamed since.
            msgs[-1] = Message("assistant", msgs[-1].content + text[seen:])
        else:
            msgs.append(Message("assistant", text))
        return request.replace(messages=msgs)

    def _timeout_error(self, name: str, now: float) -> ProviderTimeout:
        if self.deadline is not None and now >= self.deadline:
            self.deadline_hit = True
            return ProviderTimeout("the run's deadline passed during this attempt", provider=name)
        return ProviderTimeout(
            f"no reply within attempt_timeout={self.attempt_limit}s", provider=name
        )

    async def _check(
        self, name: str, response: Response, number: int, wall: float, duration: float
    ) -> tuple[Result | None, BaseException | None]:
        """Validate a reply against ``schema`` and ``accept``; record the winning attempt."""
        text = response.text if not self.delivered else "".join(self.delivered)
        value = None
        if self.schema is not None:
            try:
                value = schema_adapter(self.schema).validate_json(text)
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
        attempts = (*self.attempts, attempt)
        result = Result(text, name, attempts, self._elapsed(), value, response.model)
        if self.agent.accept is not None and not await call_hook(
            "accept", self.agent.accept, result
        ):
            return None, Rejected("the accept check refused the reply", provider=name)
        self._note = None
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
        policy: RetryPolicy,
    ) -> None:
        reason = "deadline" if self.deadline_hit else reason_of(error)
        usage = response.usage if response is not None else None
        cost = response.cost_usd if response is not None else None
        self.attempts.append(
            Attempt(name, error, number, wall, duration, reason, usage, cost, self._note)
        )
        self._note = None
        store = self.agent.health_store
        if store is not None and not self.deadline_hit:  # our own deadline is not its fault
            if _counts_for_health(error):
                # A Retry-After the policy waits out is a normal retry, not a reason to open
                # the circuit; only one it refuses to wait for keeps the provider away.
                waited = policy.allows_retry_after(error)
                store.record_failure(
                    name, retry_after=None if waited else policy.retry_after_of(error)
                )
            elif self.probing == name and (
                response is not None or isinstance(error, TerminalError)
            ):
                # The probe got an answer (refused, off-schema, a guardrail): the provider is
                # up. Resolve the probe so the circuit does not stay half-open.
                store.record_success(name)
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

    def _skip(self, name: str, open_until: float | None) -> CircuitOpen:
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
        return error

    def _elapsed(self) -> float:
        return self.agent.clock.now() - self.started


def _counts_for_health(error: BaseException) -> bool:
    """Whether the circuit breaker counts ``error``: the class says (``counts_for_health``)."""
    means = meaning(error)
    return means is not None and means.counts_for_health
