"""The metrics: GenAI client metrics and ours, through the global meter provider.

Instruments are made once per meter provider (the application's SDK one) and
recorded from the engine's run observer (:mod:`orchestrator.telemetry.spans`).
``failover.circuit.state`` is an observable gauge read from the health stores of
the agents that ran since the meter provider was installed; its callback only reads
each store's local view (``snapshot``: no network I/O, also for Redis).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.telemetry import names as n
from orchestrator.telemetry.capacity import CapacityGauges
from orchestrator.telemetry.histograms import HistogramTally, add, attach
from orchestrator.telemetry.installed import PerProvider, api, meter_provider, sdk_only
from orchestrator.telemetry.tallies import Tally

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.types import Usage

__all__ = ["Instruments", "Series", "instruments", "instruments_of"]

Attrs = Mapping[str, str | int]


class Instruments:
    """The metric instruments of one meter, and how the engine records into them."""

    __slots__ = (
        "attempts",
        "capacity",
        "cost",
        "duration",
        "fallbacks",
        "first_chunk",
        "lock",
        "tallied",
        "tokens",
        "watched",
    )

    def __init__(self, meter: Any, provider: Any = None) -> None:
        #: One lock for every tally: an attempt records all its metrics taking it once.
        self.lock = threading.Lock()
        #: The agents whose circuits ``failover.circuit.state`` reports (held weakly).
        self.watched: weakref.WeakSet[FallbackAgent] = weakref.WeakSet()
        specs = (
            (n.METRIC_DURATION, "s", "GenAI operation duration (one upstream attempt)."),
            (n.METRIC_TOKENS, "{token}", "Tokens per attempt, by gen_ai.token.type."),
            (n.METRIC_FIRST_CHUNK, "s", "From a streamed attempt's start to its first chunk."),
        )
        # Tallied when the provider's readers can take them (orchestrator.telemetry.histograms).
        tallies = [
            HistogramTally(name, unit, text, _buckets(unit), self.lock)
            for name, unit, text in specs
        ]
        made = tallies if attach(provider, n.SCOPE, tallies) else None
        self.tallied = made is not None
        self.duration, self.tokens, self.first_chunk = made or [
            _histogram(meter, name, unit, text) for name, unit, text in specs
        ]
        #: Counters are tallies read at collection time (see orchestrator.telemetry.tallies).
        self.attempts = _counter(
            meter,
            n.METRIC_ATTEMPTS,
            "{attempt}",
            "Attempts, by provider and failover decision.",
            self.lock,
        )
        self.fallbacks = _counter(
            meter,
            n.METRIC_FALLBACKS,
            "{fallback}",
            "Hand-overs from one child to the next, by reason.",
            self.lock,
        )
        self.cost = _counter(
            meter, n.METRIC_COST, "USD", "Cost of attempts, by provider and model.", self.lock
        )
        meter.create_observable_gauge(
            n.METRIC_CIRCUIT,
            callbacks=[self._circuit_states],
            unit="1",
            description="Circuit state by provider: 0 closed, 1 half-open, 2 open.",
        )
        self.capacity = CapacityGauges(meter, self._capacity_stores)

    def series(self, described: Any) -> Series | None:
        """The points a success on ``described`` (a child's label sets) records into, found
        once and kept on it; ``None`` when the histograms are the SDK's own."""
        if not self.tallied:
            return None
        with self.lock:
            series = Series(self, described)
        described.bound[:] = (self, series)
        return series

    def succeeded(
        self,
        described: Any,
        duration: float,
        first: float | None,
        usage: Usage | None,
        cost: float,
    ) -> bool:
        """One successful attempt on ``described``: every metric of it, under one lock, into
        its :meth:`series`; False, nothing recorded, when the histograms are the SDK's."""
        bound = described.bound
        series: Series | None = bound[1] if bound[0] is self else self.series(described)
        if series is None:
            return False
        with self.lock:
            add(series.duration, series.time_bounds, duration)
            if first is not None:
                add(series.first_chunk, series.time_bounds, first)
            if usage is not None:
                add(series.tokens_in, series.token_bounds, usage.input_tokens)
                add(series.tokens_out, series.token_bounds, usage.output_tokens)
            counted = series.attempts
            counted[1] = 1 if counted[1] is None else counted[1] + 1
            if cost:
                counted = series.cost
                counted[1] = cost if counted[1] is None else counted[1] + cost
        return True

    def fallback(self, frm: str, to: str, reason: str) -> None:
        """One hand-over from ``frm`` to ``to``."""
        self.fallbacks.add(1, {n.FROM: frm, n.TO: to, n.REASON: reason})

    def watch(self, agent: FallbackAgent) -> None:
        """Report ``agent``'s circuits in ``failover.circuit.state`` and its capacity store's
        limiters and budgets in ``failover.capacity.used`` and ``failover.budget.spent``."""
        with _lock:
            self.watched.add(agent)
        agent.watched_by = self  # so that the run observer need not ask again

    def _capacity_stores(self) -> list[Any]:
        """The capacity stores of the watched agents' health stores (those without one
        count in the process's default store, which the gauges always read)."""
        with _lock:
            agents = list(self.watched)
        stores = [getattr(a.health_store, "capacity", None) for a in agents]
        return [s for s in stores if s is not None]

    def _circuit_states(self, options: Any) -> Iterable[Any]:
        """The gauge's callback (on the reader's thread): each watched provider's circuit,
        the worst state any store reports when agents with different stores share a name."""
        with _lock:
            agents = list(self.watched)
        states: dict[str, int] = {}
        for agent in agents:
            store = agent.health_store
            for child in agent.children:
                if store is None or hasattr(child, "members"):  # a nested chain reports its own
                    continue
                try:
                    state = n.CIRCUIT_STATES.get(store.snapshot(child.name).state, 0)
                except Exception:  # a store must not break the exporter
                    continue
                states[child.name] = max(state, states.get(child.name, 0))
        observation = api()[1].Observation
        return [observation(value, {n.PROVIDER: name}) for name, value in states.items()]


class Series:
    """One child's points in each metric a successful attempt records (its label sets built
    once, see :meth:`Instruments.series`); made with the instruments' lock held."""

    __slots__ = (
        "attempts",
        "cost",
        "duration",
        "first_chunk",
        "time_bounds",
        "token_bounds",
        "tokens_in",
        "tokens_out",
    )

    def __init__(self, meters: Instruments, described: Any) -> None:
        labels = described.metric
        self.duration = meters.duration.point(labels)
        self.first_chunk = meters.first_chunk.point(labels)
        self.tokens_in = meters.tokens.point(described.tokens[0])
        self.tokens_out = meters.tokens.point(described.tokens[1])
        self.time_bounds, self.token_bounds = meters.duration.bounds, meters.tokens.bounds
        self.attempts = meters.attempts.cell(described.decisions["success"])
        self.cost = meters.cost.cell(labels)


def _counter(meter: Any, name: str, unit: str, description: str, lock: threading.Lock) -> Tally:
    """A :class:`Tally` exported as an observable counter named ``name``."""
    tally = Tally(lock)
    meter.create_observable_counter(
        name, callbacks=[tally.observe], unit=unit, description=description
    )
    return tally


def _buckets(unit: str) -> Sequence[float]:
    """The bucket boundaries the GenAI conventions advise for ``unit``."""
    return n.TOKEN_BUCKETS if unit == "{token}" else n.DURATION_BUCKETS


def _histogram(meter: Any, name: str, unit: str, description: str) -> Any:
    """The SDK's histogram, with the advised bucket boundaries."""
    return meter.create_histogram(
        name,
        unit=unit,
        description=description,
        explicit_bucket_boundaries_advisory=_buckets(unit),
    )


_lock = threading.Lock()
_instruments = PerProvider()


def instruments() -> Instruments | None:
    """The instruments of the global meter provider, or ``None`` until an SDK one is installed."""
    return instruments_of(meter_provider())


def instruments_of(provider: Any) -> Instruments | None:
    """The instruments of ``provider`` (a global meter provider as read), or ``None`` unless
    it is an SDK's."""
    sdk = sdk_only(provider)
    if sdk is None:
        return None
    made: Instruments = _instruments.get(sdk, _made_for)
    return made


def _made_for(provider: Any) -> Instruments:
    return Instruments(provider.get_meter(n.SCOPE), provider)
