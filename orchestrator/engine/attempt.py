"""One attempt: call a child under its deadline, validate the reply, record the Attempt.

:class:`AttemptLog` is all a run remembers as it goes (every attempt, the note
the next one carries, whether the run's deadline passed); :func:`attempt` is the
single call, used alike by the run's first try of a child and by the retry loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

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
from orchestrator.keywords import not_a_tool_call
from orchestrator.types import Attempt, Request, Response, Result, ToolCall

if TYPE_CHECKING:
    from orchestrator.engine.run import Run
    from orchestrator.policy import RetryPolicy
    from orchestrator.telemetry.spans import RunTrace

__all__ = [
    "accepts",
    "AttemptLog",
    "attempt",
    "call_hook",
    "report_call",
    "schema_adapter",
    "schema_json",
    "skip",
    "skipped",
    "watch_hook",
]

E = TypeVar("E", bound=BaseException)


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


async def accepts(accept: Callable[..., Any], result: Result) -> bool:
    """What the ``accept`` hook says of ``result``; a ``HookError`` when it does not answer
    with a bool (a check that forgot its ``return`` would refuse every reply)."""
    verdict = await call_hook("accept", accept, result)
    if not isinstance(verdict, bool):
        raise HookError(
            "accept",
            TypeError(
                f"returned {type(verdict).__name__}; return a bool: True keeps the reply, "
                "False refuses it (the next provider is asked)"
            ),
        )
    return verdict


async def watch_hook(run: Run, name: str, hook: Callable[..., Any], *args: Any) -> None:
    """Call an observational hook (``on_retry``, ``on_fallback``, ``on_all_failed``).

    It only watches, so it cannot stop the run: if it raises, the failure is a
    ``hook_failed`` event and a note on the attempt that fired the hook (its type
    only: the message may hold anything), and the run goes on. A cancellation
    still propagates.
    """
    try:
        out = hook(*args)
        if inspect.isawaitable(out):
            await out
    except Exception as e:
        kind = type(e).__name__
        events.emit("warning", "hook_failed", agent=run.agent.name, hook=name, error_type=kind)
        if run.log.attempts:
            before = run.log.attempts[-1].note
            note = f"{name} raised {kind}"
            run.log.amend_last(note=f"{before}; {note}" if before else note)


@lru_cache(maxsize=256)
def schema_adapter(schema: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


def schema_json(schema: Any) -> dict[str, Any]:
    """The JSON schema providers are asked to follow (computed once per type); a
    ``TypeError`` naming the fix for a JSON schema given as a dict."""
    if isinstance(schema, Mapping | str):
        raise TypeError(
            "schema= takes a type pydantic validates (a pydantic model, a dataclass, a "
            f"TypedDict, list[int], ...), got a {type(schema).__name__}. For a JSON schema "
            "dict, put it on the request: Request(prompt, json_schema={...}) asks every "
            "provider for JSON that follows it (not validated: parse result.text)"
        )
    return _schema_json(schema)


@lru_cache(maxsize=256)
def _schema_json(schema: Any) -> dict[str, Any]:
    out: dict[str, Any] = schema_adapter(schema).json_schema()
    return out


#: What the last attempt tells the health store about its provider, once the call ends:
#: ``SUCCEEDED``, a counted failure (``(True, retry_after)``), or ``None`` (nothing).
Verdict = tuple[bool, float | None]
SUCCEEDED: Verdict = (False, None)


class AttemptLog:
    """Every attempt of one run, in order, and what the next one should note.

    ``note`` waits for the next recorded attempt (a half-open probe, a last-resort
    call); ``deadline_passed`` is set when an attempt ran into the run's deadline;
    ``verdict`` is what the latest attempt says of its provider's health (see
    :func:`report_call`). ``pending`` is the index of a failed attempt whose
    decision (retry, fallback, stop) is not made yet (``Run.decided``). A nested
    chain keeps a log of its own, added to the outer one when it ends.
    """

    __slots__ = (
        "attempts", "began", "deadline_passed", "first_at", "note", "pending", "started", "trace",
        "verdict",
    )  # fmt: skip

    def __init__(self, started: float) -> None:
        self.started = self.began = started
        #: When the latest attempt began and when its first content came (a streamed call).
        self.first_at: float | None = None
        self.attempts: list[Attempt] = []
        self.note: str | None = None
        self.deadline_passed = False
        self.verdict: Verdict | None = None
        self.pending: int | None = None
        self.trace: RunTrace | None = None  # the run's telemetry, when on

    def add(self, attempt: Attempt) -> None:
        """Record ``attempt`` (built with the pending ``note``, which it uses up)."""
        self.attempts.append(attempt)
        self.note = None
        if self.trace is not None and attempt.attempt_number == 0:
            self.trace.skipped(attempt)  # skipped without a request: an event on the run span

    def amend_last(self, **changes: Any) -> None:
        """Amend the last attempt (why nothing followed it; a refusal found later)."""
        self.attempts[-1] = replace(self.attempts[-1], **changes)

    def count(self, error_type: type[BaseException], since: int) -> int:
        """How many attempts from index ``since`` on failed with ``error_type``."""
        return sum(isinstance(a.error, error_type) for a in self.attempts[since:])


async def attempt(
    run: Run, child: Any, request: Request, number: int, policy: RetryPolicy, probe: bool = False
) -> Result | BaseException:
    """Call ``child`` once; returns its Result or its error, recorded in ``run.log`` either way.

    ``policy`` decides what a failure would tell the health store; ``probe`` marks
    the half-open probe, whose answer resolves the circuit even when it is refused.
    Nothing is told yet: the attempt leaves its verdict in ``run.log.verdict`` and
    the call (this attempt and its retries) reports only the last one
    (:func:`report_call`).
    """
    run.log.verdict = None
    clock = run.agent.clock
    t0 = run.log.began = clock.now()
    run.log.first_at = None  # set by a streamed delivery at the call's first content
    wall = clock.wall()
    deadline = run.deadline
    if run.attempt_limit is not None:
        own = t0 + run.attempt_limit
        deadline = own if deadline is None or own < deadline else deadline
    response: Any = None
    error: BaseException | None = None
    trace = run.log.trace
    track = None
    if trace is not None:  # a hedge lane's view of its provider says it is a hedge
        hedge = getattr(child, "hedge", False) is True
        track = trace.attempt_started(child, number, request, hedge=hedge)
    try:
        call = run.delivery.call(child, request, run)
        if track is not None:
            call = track.within(call)  # its span current: traceparent goes out
        if deadline is None:
            response = await call
        else:
            cm = clock.timeout_at(deadline)
            try:
                async with cm:
                    response = await call
            except TimeoutError:
                if not getattr(cm, "expired", lambda: False)():
                    raise
                error = _timeout_error(run, child.name, clock.now())
    except Exception as e:
        error = e
    except asyncio.CancelledError:
        if run.delivery.left:  # the consumer left the stream: the call it cut is on record
            cut = Attempt(child.name, None, number, wall, clock.now() - t0, "cancelled")
            run.log.add(cut)  # (its span, if any, is closed as cut short by the run's end)
        raise
    duration = clock.now() - t0
    if error is None:
        if isinstance(response, Response):
            result, error = await _check(run, child.name, response, number, wall, duration)
            if result is not None:
                if track is not None:
                    track.ended(run.log.attempts[-1], response)
                return result
        else:
            error = InvalidOutput(
                f"complete() returned {type(response).__name__}, expected Response",
                provider=child.name,
            )
            response = None
    assert error is not None
    _record_failure(run, child.name, error, (number, wall, duration), response, policy, probe)
    if track is not None:
        track.ended(run.log.attempts[-1], response, policy.retry_after_of(error))
    return error


def _timeout_error(run: Run, name: str, now: float) -> ProviderTimeout:
    if run.deadline is not None and now >= run.deadline:
        run.log.deadline_passed = True
        return ProviderTimeout("the run's deadline passed during this attempt", provider=name)
    return ProviderTimeout(f"no reply within attempt_timeout={run.attempt_limit}s", provider=name)


async def _check(
    run: Run, name: str, response: Response, number: int, wall: float, duration: float
) -> tuple[Result | None, BaseException | None]:
    """Validate a reply against the schema and ``accept``; record the winning attempt."""
    agent = run.agent
    log = run.log
    text = run.delivery.text(response)
    value = None
    if run.request.tools or response.tool_calls:
        from orchestrator.tools import tool_call_error  # only runs with tools pay the import

        bad = [c for c in response.tool_calls if not isinstance(c, ToolCall)]
        refused = (
            InvalidOutput(f"Response.tool_calls: {not_a_tool_call(bad[0])}", provider=name)
            if bad
            else tool_call_error(run.request, response.tool_calls, name)
        )
        if refused is not None:
            return None, refused
    # A reply that calls tools is a step of the loop, not the answer the schema describes.
    if run.schema is not None and not response.tool_calls:
        try:
            value = schema_adapter(run.schema).validate_json(text)
        except Exception as e:
            where = "; ".join(
                f"{'.'.join(map(str, err.get('loc', ())))}: {err.get('type')}"
                for err in getattr(e, "errors", lambda: [])()[:3]
            )
            return None, InvalidOutput(
                f"reply does not match schema {run.request.schema_name}"
                + (f" ({where})" if where else ": not valid JSON"),
                provider=name,
            )
    attempt = Attempt(
        name, None, number, wall, duration, None, response.usage, response.cost_usd, log.note
    )
    result = Result(
        text,
        name,
        (*log.attempts, attempt),
        run.elapsed(),
        value,
        response.model,
        tool_calls=response.tool_calls,
        order=run.order,
        arm=run.arm,
    )
    if agent.accept is not None and not await accepts(agent.accept, result):
        return None, Rejected("the accept check refused the reply", provider=name)
    log.add(attempt)
    log.verdict = SUCCEEDED
    if events.is_enabled():  # the fields cost more than the check: the hot path skips both
        events.emit(
            "debug",
            "attempt_succeeded",
            agent=agent.name,
            child=name,
            attempt=number,
            duration=duration,
            decision="success",
            **events.attempt_fields(attempt),
        )
    return result, None


def _record_failure(
    run: Run,
    name: str,
    error: BaseException,
    when: tuple[int, float, float],
    response: Response | None,
    policy: RetryPolicy,
    probe: bool,
) -> None:
    """Record a failed attempt (``when``: its number, wall start, duration) and its verdict."""
    number, wall, duration = when
    log = run.log
    reason = "deadline" if log.deadline_passed else reason_of(error)
    # A billed reply it could not use: the Response when there is one, else what the error kept.
    billed = (
        response if response is not None else error if isinstance(error, InvalidOutput) else None
    )
    usage = billed.usage if billed is not None else None
    cost = billed.cost_usd if billed is not None else None
    log.add(Attempt(name, error, number, wall, duration, reason, usage, cost, log.note))
    if not log.deadline_passed:  # our own deadline is not its fault
        if _counts_for_health(error):
            # A Retry-After the policy waits out is a normal retry, not a reason to open
            # the circuit; only one it refuses to wait for keeps the provider away (and
            # ends the call: such an error is never retried, so it is reported at once).
            waited = policy.allows_retry_after(error)
            log.verdict = (True, None if waited else policy.retry_after_of(error))
        elif probe and (response is not None or isinstance(error, TerminalError)):
            # The probe got an answer (refused, off-schema, a guardrail): the provider is
            # up. Resolve the probe so the circuit does not stay half-open.
            log.verdict = SUCCEEDED
    # Its ``attempt_failed`` event waits for the decision that follows (Run.decided).
    log.pending = len(log.attempts) - 1


def report_call(run: Run, name: str) -> None:
    """Tell the health store how the call to ``name`` (its first attempt and retries) ended.

    The breaker judges a provider by its calls, not its attempts: a call failed
    when its last attempt left a counted failure, succeeded when it answered. A
    provider failing 50% of attempts at random answers 94% of calls with three
    retries; counted per attempt it looked down and every circuit opened.
    """
    verdict, run.log.verdict = run.log.verdict, None
    store = run.agent.health_store
    if store is None or verdict is None:
        return
    failed, retry_after = verdict
    if failed:
        store.record_failure(name, retry_after=retry_after)
    else:
        store.record_success(name)


def skipped(run: Run, name: str, open_until: float | None) -> CircuitOpen:
    """Record that ``name`` was skipped, its circuit open; the error to hand over with."""
    error = CircuitOpen("skipped: circuit open", provider=name)
    note = f"open until {open_until:.3f}" if open_until else None
    return skip(run, name, error, note)


def skip(run: Run, name: str, error: E, note: str | None = None) -> E:
    """Record that ``name`` was skipped without a request; returns ``error`` to hand over with.

    The attempt is number 0, its reason from ``error``'s class (``circuit_open``,
    ``unsupported``...)."""
    reason = reason_of(error)
    run.log.add(Attempt(name, error, 0, run.agent.clock.wall(), 0.0, reason, note=note))
    events.emit(
        "info",
        "attempt_failed",
        agent=run.agent.name,
        child=name,
        attempt=0,
        reason=reason,
        **events.error_fields(error),
    )
    return error


def _counts_for_health(error: BaseException) -> bool:
    """Whether the circuit breaker counts ``error``: the class says (``counts_for_health``)."""
    means = meaning(error)
    return means is not None and means.counts_for_health
