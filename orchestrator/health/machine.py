"""The circuit state machine and the retry-budget window, in memory, on an injected clock.

Both stores use these: :class:`MemoryHealthStore` as its whole state, the Redis
store as its local mirror (so a call never waits on the network).

States::

    closed --(failure ratio / threshold / long Retry-After)--> open --(cooldown over)--> half_open
    half_open --(one probe succeeds)--> closed
    half_open --(a failure)--> open (a fresh cooldown)
    open --(a last-resort call succeeds)--> closed

A last-resort call is one a run makes to an open circuit because every
circuit it could use is open; at most one per provider is in flight at a time.

Internally times are monotonic (``clock.now()``); they are reported as epoch
seconds (``clock.wall()``) so they mean the same thing in every process.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator

from orchestrator import events
from orchestrator.clock import Clock
from orchestrator.health.model import (
    Admission,
    CircuitBreaker,
    CircuitStateName,
    ProviderHealth,
    RetryBudget,
)

__all__ = ["ALLOWED", "BudgetWindow", "Circuit", "CircuitTable", "ProbeGate"]

ALLOWED = Admission(allowed=True, probe=False, state="closed", open_until=None)
_PROBE = Admission(allowed=True, probe=True, state="half_open", open_until=None)
_PROBE_BUSY = Admission(allowed=False, probe=False, state="half_open", open_until=None)

#: Asked before a half-open probe is granted: ``gate(provider)`` False refuses it
#: (the Redis store uses it so only the process holding the shared claim probes).
ProbeGate = Callable[[str], bool]


#: The breaker's window is counted in this many buckets of ``window / WINDOW_BUCKETS``
#: seconds (the Redis store keeps the same buckets as keys): memory per provider stays
#: constant however many calls a second go through, where one entry per call grew by
#: tens of MiB at thousands of calls a second. The window covers the last
#: ``window * (1 - 1/WINDOW_BUCKETS)`` to ``window`` seconds.
WINDOW_BUCKETS = 10
_EMPTY = -(1 << 62)  # the bucket number of a slot that never counted anything


class Circuit:
    """One provider's breaker state (mutated only under the table's lock)."""

    __slots__ = (
        "calls",
        "consecutive",
        "fails",
        "open_until",
        "probe_started",
        "provider",
        "stamps",
        "tripped",
    )

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.tripped = False  # open or half-open
        self.open_until = 0.0  # monotonic end of the cooldown, meaningful when tripped
        self.consecutive = 0
        # The window: bucket number (time // width) each slot holds, and its counts.
        self.stamps = [_EMPTY] * WINDOW_BUCKETS
        self.calls = [0] * WINDOW_BUCKETS
        self.fails = [0] * WINDOW_BUCKETS
        self.probe_started: float | None = None  # monotonic start of the probe in flight

    def totals(self, bucket: int) -> tuple[int, int]:
        """(calls, failures) over the window that ends in bucket number ``bucket``."""
        calls = fails = 0
        oldest = bucket - WINDOW_BUCKETS
        for i, stamp in enumerate(self.stamps):
            if stamp > oldest:
                calls += self.calls[i]
                fails += self.fails[i]
        return calls, fails

    def clear_window(self) -> None:
        self.stamps = [_EMPTY] * WINDOW_BUCKETS
        self.calls = [0] * WINDOW_BUCKETS
        self.fails = [0] * WINDOW_BUCKETS

    def state(self, now: float) -> CircuitStateName:
        if not self.tripped:
            return "closed"
        return "open" if now < self.open_until else "half_open"


class CircuitTable:
    """Every provider's circuit under one lock; emits an event on every state change."""

    def __init__(
        self, config: CircuitBreaker, clock: Clock, *, probe_gate: ProbeGate | None = None
    ) -> None:
        self.config = config
        self.clock = clock
        self.probe_gate = probe_gate
        self.lock = threading.Lock()
        self._width = config.window / WINDOW_BUCKETS
        self._circuits: dict[str, Circuit] = {}
        self._last_resort: set[str] = set()  # providers with a last-resort call in flight

    def __iter__(self) -> Iterator[Circuit]:
        return iter(list(self._circuits.values()))

    def get(self, provider: str) -> Circuit:
        circuit = self._circuits.get(provider)
        if circuit is None:
            circuit = self._circuits.setdefault(provider, Circuit(provider))
        return circuit

    def to_wall(self, monotonic: float) -> float:
        return self.clock.wall() + (monotonic - self.clock.now())

    def admit(self, provider: str) -> Admission:
        circuit = self.get(provider)
        if not circuit.tripped:  # the hot path: no clock read, no allocation
            return ALLOWED
        with self.lock:
            now = self.clock.now()
            if not circuit.tripped:
                return ALLOWED
            if now < circuit.open_until:
                return Admission(False, False, "open", self.to_wall(circuit.open_until))
            started = circuit.probe_started
            if started is not None and now - started < self.config.cooldown:
                return _PROBE_BUSY  # one probe in flight; a lost one is released after cooldown
            if self.probe_gate is not None and not self.probe_gate(provider):
                return _PROBE_BUSY
            circuit.probe_started = now
            reason = "cooldown_over" if started is None else "probe_lost"
        self._emit("circuit_half_open", circuit, "half_open", None, reason)
        return _PROBE

    def record(self, provider: str, *, failed: bool, retry_after: float | None = None) -> None:
        circuit = self.get(provider)
        with self.lock:
            now = self.clock.now()
            self._count(circuit, now, failed)
            if failed:
                change = self._on_failure(circuit, now, retry_after)
            else:
                change = self._on_success(circuit, now)
        if change is not None:
            event, reason = change
            until = self.to_wall(circuit.open_until) if event == "circuit_opened" else None
            state: CircuitStateName = "open" if event == "circuit_opened" else "closed"
            self._emit(event, circuit, state, until, reason)

    def _count(self, circuit: Circuit, now: float, failed: bool) -> None:
        bucket = int(now // self._width)
        slot = bucket % WINDOW_BUCKETS
        if circuit.stamps[slot] != bucket:  # a bucket that left the window: reuse it
            circuit.stamps[slot] = bucket
            circuit.calls[slot] = circuit.fails[slot] = 0
        circuit.calls[slot] += 1
        if failed:
            circuit.fails[slot] += 1

    def _on_success(self, circuit: Circuit, now: float) -> tuple[str, str] | None:
        circuit.consecutive = 0
        if circuit.tripped and now >= circuit.open_until:
            self._close(circuit)
            return "circuit_closed", "probe_succeeded"
        # A success while still open is a call admitted before the circuit opened: no change.
        return None

    def _on_failure(
        self, circuit: Circuit, now: float, retry_after: float | None
    ) -> tuple[str, str] | None:
        circuit.consecutive += 1
        config = self.config
        hint = config.hold_for(retry_after)
        if circuit.tripped:
            if now >= circuit.open_until:  # half-open: the probe (or a straggler) failed
                self._open(circuit, now + max(config.cooldown, hint))
                return "circuit_opened", "probe_failed"
            if now + hint > circuit.open_until:  # longer Retry-After: extend, never shorten
                circuit.open_until = now + hint
            return None
        reason = self._trip_reason(circuit, now)
        length = config.cooldown if reason is not None else 0.0
        if hint > length:
            length, reason = hint, reason or "retry_after"
        if reason is None:
            return None
        self._open(circuit, now + length)
        return "circuit_opened", reason

    def _trip_reason(self, circuit: Circuit, now: float) -> str | None:
        config = self.config
        if config.failure_threshold is not None and circuit.consecutive >= config.failure_threshold:
            return "consecutive_failures"
        if config.failure_ratio is not None:
            calls, fails = circuit.totals(int(now // self._width))
            if calls >= config.min_calls and fails >= config.failure_ratio * calls:
                return "failure_ratio"
        return None

    def acquire_last_resort(self, provider: str) -> bool:
        """Take ``provider``'s last-resort slot; False while another call holds it."""
        with self.lock:
            if provider in self._last_resort:
                return False
            self._last_resort.add(provider)
            return True

    def release_last_resort(self, provider: str, *, succeeded: bool) -> bool:
        """Free the slot; a success is evidence the provider is up: close it (True if closed)."""
        circuit = self.get(provider)
        with self.lock:
            self._last_resort.discard(provider)
            if not (succeeded and circuit.tripped):
                return False
            self._close(circuit)
            circuit.consecutive = 0
        self._emit("circuit_closed", circuit, "closed", None, "last_resort_succeeded")
        return True

    @staticmethod
    def _open(circuit: Circuit, until: float) -> None:
        circuit.tripped = True
        circuit.open_until = until
        circuit.probe_started = None

    @staticmethod
    def _close(circuit: Circuit) -> None:
        circuit.tripped = False
        circuit.probe_started = None
        circuit.clear_window()  # a fresh start: old failures must not re-trip it at once

    def adopt(
        self, provider: str, *, tripped: bool, open_until: float | None, consecutive: int
    ) -> None:
        """Take a shared view (from another process) as this circuit's state; emits on change.

        ``open_until`` is monotonic on this table's clock, or ``None`` when the
        cooldown is over (the circuit is then half-open if ``tripped``).
        """
        circuit = self.get(provider)
        with self.lock:
            now = self.clock.now()
            before = circuit.state(now)
            circuit.consecutive = consecutive
            if not tripped:
                if circuit.tripped:
                    self._close(circuit)
            elif open_until is None:  # shared view: cooldown over, half-open
                if not circuit.tripped:
                    self._open(circuit, now)
                elif now < circuit.open_until:
                    circuit.open_until = now
            elif not circuit.tripped or abs(open_until - circuit.open_until) > 1e-3:
                if before == "open":
                    circuit.open_until = open_until
                else:  # closed, or half-open and re-opened elsewhere: drop any local probe
                    self._open(circuit, open_until)
            after = circuit.state(now)
        if before != after and after != "half_open":
            event = "circuit_opened" if after == "open" else "circuit_closed"
            until_wall = self.to_wall(circuit.open_until) if after == "open" else None
            self._emit(event, circuit, after, until_wall, "shared")

    def snapshot(self, provider: str) -> ProviderHealth:
        circuit = self.get(provider)
        with self.lock:
            now = self.clock.now()
            calls, fails = circuit.totals(int(now // self._width))
            state = circuit.state(now)
            until = self.to_wall(circuit.open_until) if state == "open" else None
            return ProviderHealth(
                provider=provider,
                state=state,
                open_until=until,
                consecutive_failures=circuit.consecutive,
                recent_failures=fails,
                recent_calls=calls,
            )

    @staticmethod
    def _emit(
        event: str, circuit: Circuit, state: str, open_until: float | None, reason: str
    ) -> None:
        level = "warning" if event == "circuit_opened" else "info"
        events.emit(
            level,
            event,
            provider=circuit.provider,
            state=state,
            open_until=open_until,
            reason=reason,
            consecutive_failures=circuit.consecutive,
        )


class BudgetWindow:
    """The retry budget over a sliding window: exact, one timestamp per request and retry."""

    def __init__(self, budget: RetryBudget, clock: Clock) -> None:
        self.budget = budget
        self.clock = clock
        self.lock = threading.Lock()
        self.requests: deque[float] = deque()
        self.retries: deque[float] = deque()

    def _prune(self, now: float) -> None:
        horizon = now - self.budget.window
        for times in (self.requests, self.retries):
            while times and times[0] <= horizon:
                times.popleft()

    def record_request(self) -> None:
        with self.lock:
            now = self.clock.now()
            self.requests.append(now)
            if len(self.requests) & 63 == 0:  # amortized pruning keeps memory bounded
                self._prune(now)

    def try_acquire(self) -> bool:
        with self.lock:
            now = self.clock.now()
            self._prune(now)
            if len(self.retries) + 1 > self.budget.allowance(len(self.requests)):
                return False
            self.retries.append(now)
            return True

    def counts(self) -> tuple[int, int]:
        """(requests, retries) in the current window."""
        with self.lock:
            self._prune(self.clock.now())
            return len(self.requests), len(self.retries)
