"""The run observer: one span per run, one CLIENT span per attempt, and the metrics they feed.

The engine makes one :class:`RunTrace` per run when telemetry is on
(:func:`observe`; ``None`` otherwise, so a run without an SDK pays two look-ups)
and tells it where the run and each attempt start and end:

- ``started`` / ``ended``: the run span ``failover {agent}``, a child of the
  current span (or, for a nested chain, of the outer run's span);
- ``attempt_started``, then the returned track's ``ended``: one CLIENT span per upstream
  request, current while the provider is called (so HTTP providers send its
  ``traceparent``); a failed attempt's span stays open, ended at the time the
  attempt ended, until the engine ``decided`` what follows (retry, fallback,
  stop), so the decision is on the span;
- ``skipped``: a child skipped without a request, as an event on the run span;
- ``fell_over``: one hand-over, for ``failover.fallbacks``.

Whatever ends the run (a result, an error, a cancellation) ends every span it
opened: an attempt cut short ends with an error status.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from orchestrator.engine import serving
from orchestrator.telemetry import names as n
from orchestrator.telemetry.describe import (
    input_messages,
    output_messages,
    provider_attributes,
    reply_name,
    span_name,
)
from orchestrator.telemetry.installed import api, providers, tracer_of
from orchestrator.telemetry.instruments import Instruments, instruments_of

if TYPE_CHECKING:
    from orchestrator.engine.run import Run
    from orchestrator.types import Attempt, Request, Response, Result

__all__ = ["AttemptTrack", "RunTrace", "observe"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Described:
    """One child's span name and fixed attributes, and its metric label sets (computed
    once per agent: an attempt records without building a dict where it can)."""

    name: str
    attrs: dict[str, str | int]
    metric: dict[str, str | int]  # the low-cardinality subset metrics are labelled with
    tokens: tuple[dict[str, str | int], dict[str, str | int]]  # metric + input / output type
    decisions: dict[str, dict[str, str | int]]  # failover.attempts labels, by decision
    #: The instruments these were last recorded by, and their points (Instruments.series).
    bound: list[Any] = field(default_factory=lambda: [None, None])


def _described(agent: Any, child: Any) -> Described:
    """``child``'s :class:`Described`, made on its first attempt and kept on ``agent``."""
    cache: dict[str, Described] = agent.described
    found = cache.get(child.name)
    if found is None:
        try:
            attrs = provider_attributes(child)
        except Exception:  # a provider's own property raised: telemetry never fails a call
            attrs = {n.OPERATION_NAME: "chat", n.PROVIDER: str(child.name)}
        metric = {k: v for k, v in attrs.items() if k not in (n.SERVER_ADDRESS, n.SERVER_PORT)}
        tokens = ({**metric, n.TOKEN_TYPE: "input"}, {**metric, n.TOKEN_TYPE: "output"})
        decisions = {d: {n.PROVIDER: attrs[n.PROVIDER], n.DECISION: d} for d in n.DECISIONS}
        found = cache[child.name] = Described(span_name(attrs), attrs, metric, tokens, decisions)
    return found


def observe(run: Run, parent: RunTrace | None) -> RunTrace | None:
    """The observer of ``run`` (``parent``: the outer run's, for a nested chain), or ``None``
    when neither an SDK tracer (with ``tracing`` on) nor an SDK meter provider is installed."""
    tracing, metering = providers()  # every run asks: what was made changes with these only
    seen = _seen
    if tracing is not seen[0] or metering is not seen[1]:
        seen = _made_for(tracing, metering)
    spans, meters = seen[2], seen[3]
    agent = run.agent
    if not agent.tracing:
        spans = None
    if spans is None and meters is None:
        return None
    if meters is not None and agent.watched_by is not meters:
        meters.watch(agent)  # once per agent: a WeakSet look-up makes a weakref
    return RunTrace(run, spans, meters, parent)


#: The global providers last read, and the tracer and instruments made for them (``None``
#: each unless an SDK's).
_seen: tuple[object, object, Any, Instruments | None] = (None, None, None, None)


def _made_for(tracers: object, meters: object) -> tuple[object, object, Any, Instruments | None]:
    """The tracer and the instruments of these providers (as :func:`providers` read them),
    kept for the next run."""
    global _seen
    _seen = (tracers, meters, tracer_of(tracers), instruments_of(meters))
    return _seen


class AttemptTrack:
    """One attempt's span (``None`` when only metrics are on) and what its metrics need;
    the engine calls :meth:`within` around the provider call and :meth:`ended` after it."""

    __slots__ = ("described", "end_ns", "first_chunk", "number", "owner", "span", "started")

    def __init__(
        self, owner: RunTrace, described: Described, number: int, started: float, span: Any
    ) -> None:
        self.owner, self.described, self.number = owner, described, number
        self.started, self.span = started, span
        self.first_chunk: float | None = None
        self.end_ns: int | None = None

    def within(self, call: Awaitable[T]) -> Awaitable[T]:
        """``call`` awaited with this attempt's span current (HTTP providers send its
        ``traceparent``)."""
        return call if self.span is None else self.owner.within(self, call)

    def ended(
        self, attempt: Attempt, response: Response | None, retry_after: float | None = None
    ) -> None:
        """The attempt was recorded as ``attempt``; a failed one waits for
        :meth:`RunTrace.decided`."""
        owner = self.owner
        ok = attempt.error is None
        meters = owner.meters
        # The common case, a success outside a split's arm: recorded at once, counted too.
        counted = (
            ok
            and meters is not None
            and owner.run.arm is None
            and meters.succeeded(
                self.described,
                attempt.duration,
                self.first_chunk,
                attempt.usage,
                attempt.cost_usd or 0.0,
            )
        )
        if not counted:
            owner._record(self, attempt)
        span = self.span
        if span is not None:
            attrs = _outcome_attributes(attempt, response, retry_after)
            if ok:
                attrs[n.DECISION] = "success"
                if response is not None and owner.run.agent.capture_content:
                    attrs[n.OUTPUT_MESSAGES] = output_messages(response)
            else:
                span.set_status(api()[0].StatusCode.ERROR, attrs[n.ERROR_TYPE])
            span.set_attributes(attrs)
        if ok:
            owner._close(self, "success", counted)
        else:
            self.end_ns = time.time_ns()  # its span ends then, once the decision is known


class RunTrace:
    """Telemetry of one run (see the module docstring for when the engine calls what)."""

    __slots__ = ("context", "meters", "open", "parent", "run", "span", "tracer")

    def __init__(
        self, run: Run, spans: Any, meters: Instruments | None, parent: RunTrace | None
    ) -> None:
        self.run, self.tracer, self.meters, self.parent = run, spans, meters, parent
        self.span: Any = None
        self.context: Any = None
        self.open: list[AttemptTrack] = []

    # -- the run ------------------------------------------------------------------------

    def started(self) -> None:
        """The run starts: open its span."""
        if self.tracer is None:
            return
        trace = api()[0]
        outer = self.parent.context if self.parent is not None else None
        name = self.run.agent.name
        self.span = self.tracer.start_span(
            f"failover {name}", context=outer, attributes={n.AGENT_NAME: name}
        )
        self.context = trace.set_span_in_context(self.span, outer)

    def ended(self, result: Result | None, error: BaseException | None) -> None:
        """The run ended with ``result`` or raised ``error``: end every span it opened."""
        for track in list(self.open) if self.open else ():
            if track.end_ns is None:  # cut short (cancelled, a hook raised): no outcome
                self._cut_short(track, error)
            self._close(track, "stop")
        span = self.span
        if span is None:
            return
        attrs: dict[str, Any] = {n.ATTEMPTS: len(self.run.log.attempts)}
        routed = serving.routed(self.run)
        if routed:  # a routed run: the order it used, and its split arm
            attrs[n.ORDER] = routed["order"]
            if routed["arm"] is not None:
                attrs[n.ARM] = routed["arm"]
        if result is not None:
            attrs[n.OUTCOME] = (
                "stopped" if result.stopped else "best_effort" if result.best_effort else "success"
            )
            if result.handled_by is not None:
                attrs[n.HANDLED_BY] = result.handled_by
        else:
            attrs[n.OUTCOME] = "failed"
            attrs[n.ERROR_TYPE] = type(error).__name__
            span.set_status(api()[0].StatusCode.ERROR, type(error).__name__)
        span.set_attributes(attrs)
        span.end()

    def skipped(self, attempt: Attempt) -> None:
        """A child was skipped without a request (its circuit open...): an event on the run span."""
        if self.span is not None:
            self.span.add_event(
                n.SKIPPED_EVENT, {n.PROVIDER: attempt.agent, n.REASON: attempt.reason or "skipped"}
            )

    def fell_over(self, frm: str, to: str, reason: str) -> None:
        """The run handed over from ``frm`` to ``to`` for ``reason``."""
        if self.meters is not None:
            self.meters.fallback(frm, to, reason)

    # -- attempts -------------------------------------------------------------------------

    def attempt_started(
        self, child: Any, number: int, request: Request, *, hedge: bool = False
    ) -> AttemptTrack:
        """Attempt ``number`` on ``child`` starts (``hedge``: it races an earlier one)."""
        agent = self.run.agent
        described = agent.described.get(child.name) or _described(agent, child)
        span = None
        if self.tracer is not None:
            attrs: dict[str, Any] = {**described.attrs, n.ATTEMPT_NUMBER: number}
            if hedge:
                attrs[n.HEDGE] = True
            if agent.capture_content:
                attrs[n.INPUT_MESSAGES] = input_messages(request)
                if request.system:
                    attrs[n.SYSTEM_INSTRUCTIONS] = request.system[:8192]
            kind = api()[0].SpanKind.CLIENT
            span = self.tracer.start_span(
                described.name, context=self.context, kind=kind, attributes=attrs
            )
        track = AttemptTrack(self, described, number, 0.0, span)
        self.open.append(track)
        if self.meters is not None and hasattr(self.run.delivery, "on_chunk"):
            # The start is read only for what needs it: a stream's time to its first chunk.
            track.started = agent.clock.now()
            self.run.delivery.on_chunk = lambda: self._first_chunk(track)
        return track

    def _first_chunk(self, track: AttemptTrack) -> None:
        track.first_chunk = self.run.agent.clock.now() - track.started

    async def within(self, track: AttemptTrack, call: Awaitable[T]) -> T:
        """Await the provider ``call`` with the attempt's span current (for ``traceparent``)."""
        trace, _, context = api()
        token = context.attach(trace.set_span_in_context(track.span, self.context))
        try:
            return await call
        finally:
            context.detach(token)

    def decided(self, attempt: Attempt, decision: str) -> None:
        """The engine decided what follows the failed ``attempt``: end its span."""
        for track in self.open:
            if (
                track.end_ns is not None
                and track.number == attempt.attempt_number
                and track.described.attrs[n.PROVIDER] == attempt.agent
            ):
                self._close(track, decision)
                return

    def lost(self, attempt: Attempt) -> None:
        """The attempt was cancelled because a hedged one won (reason ``hedge_lost``): end
        its span now, not as an error, with its estimated usage and cost."""
        for track in self.open:
            if (
                track.end_ns is None
                and track.number == attempt.attempt_number
                and track.described.attrs[n.PROVIDER] == attempt.agent
            ):
                track.end_ns = time.time_ns()
                if track.span is not None:
                    attrs = _outcome_attributes(attempt, None, None)
                    attrs[n.REASON] = "hedge_lost"
                    attrs[n.USAGE_ESTIMATED] = True
                    track.span.set_attributes(attrs)
                self._record(track, attempt)
                self._close(track, "hedge_lost")
                return

    def _close(self, track: AttemptTrack, decision: str, counted: bool = False) -> None:
        """End the attempt's span (at the time the attempt ended) with ``decision`` on it
        (``counted``: its attempt was counted already)."""
        self.open.remove(track)
        if self.meters is not None and not counted:
            labels = track.described.decisions.get(decision)
            if labels is None:
                labels = {n.PROVIDER: track.described.attrs[n.PROVIDER], n.DECISION: decision}
            if self.run.arm is not None:  # a split's arm: an experiment read off the dashboard
                labels = {**labels, n.ARM: self.run.arm}
            self.meters.attempts.add(1, labels)
        span = track.span
        if span is not None:
            if track.end_ns is not None:
                span.set_attribute(n.DECISION, decision)
            span.end(end_time=track.end_ns)

    def _record(self, track: AttemptTrack, attempt: Attempt) -> None:
        """The attempt's metrics one by one (its count is :meth:`_close`'s): a failure, a lost
        hedge, a split's arm, or the SDK's own histograms (see
        :meth:`Instruments.succeeded`)."""
        meters = self.meters
        if meters is None:
            return
        labels = track.described.metric
        if attempt.error is not None:
            labels = {**labels, n.ERROR_TYPE: type(attempt.error).__name__}
        meters.duration.record(attempt.duration, labels)
        if track.first_chunk is not None:
            meters.first_chunk.record(track.first_chunk, track.described.metric)
        usage = attempt.usage
        if usage is not None:
            tokens_in, tokens_out = track.described.tokens
            meters.tokens.record(usage.input_tokens, tokens_in)
            meters.tokens.record(usage.output_tokens, tokens_out)
        if attempt.cost_usd:
            meters.cost.add(attempt.cost_usd, track.described.metric)

    def _cut_short(self, track: AttemptTrack, error: BaseException | None) -> None:
        """An attempt the run left without its outcome: its span says what cut it short."""
        track.end_ns = time.time_ns()
        if track.span is not None:
            kind = type(error).__name__ if error is not None else "CancelledError"
            track.span.set_attribute(n.ERROR_TYPE, kind)
            track.span.set_status(api()[0].StatusCode.ERROR, kind)


def _outcome_attributes(
    attempt: Attempt, response: Response | None, retry_after: float | None
) -> dict[str, Any]:
    """How the attempt ended, as span attributes (numbers and names only: no text)."""
    attrs: dict[str, Any] = {}
    if response is not None and response.model:
        attrs[n.RESPONSE_MODEL] = reply_name(response.model)  # the server's: bounded
    usage = attempt.usage
    if usage is not None:
        attrs[n.INPUT_TOKENS] = usage.input_tokens
        attrs[n.OUTPUT_TOKENS] = usage.output_tokens
        if usage.cache_read_tokens:  # the prompt cache's part of the input, when it had one
            attrs[n.CACHE_READ_TOKENS] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            attrs[n.CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    if attempt.cost_usd is not None:
        attrs[n.COST_USD] = attempt.cost_usd
    if attempt.error is not None:
        attrs[n.ERROR_TYPE] = type(attempt.error).__name__
        attrs[n.REASON] = attempt.reason or "error"
    if retry_after is not None:
        attrs[n.RETRY_AFTER] = retry_after
    return attrs
