"""MemoryHealthStore: circuits and the retry budget of one process, and the process default."""

from __future__ import annotations

import threading

from orchestrator.capacity.memory import MemoryCapacity
from orchestrator.clock import SYSTEM_CLOCK, Clock
from orchestrator.health.machine import BudgetWindow, CircuitTable
from orchestrator.health.model import (
    Admission,
    CircuitBreaker,
    ProviderHealth,
    RetryBudget,
)
from orchestrator.routing.state import MemoryRouting

__all__ = ["MemoryHealthStore", "default_health_store", "reset_default_health_store"]


class MemoryHealthStore:
    """Circuit breakers and a retry budget held in this process's memory (the default store).

    Use it for one process; use :class:`RedisHealthStore` when many processes
    or hosts call the same providers and should learn from each other. It
    records what the engine tells it: the engine decides what counts as a
    failure (only transient and unusable errors; never guardrails, invalid
    requests, cancellations or hook errors). Thread-safe; no I/O.
    """

    def __init__(
        self,
        *,
        circuit: CircuitBreaker | None = None,
        budget: RetryBudget | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.circuit = circuit if circuit is not None else CircuitBreaker()
        self.budget = budget if budget is not None else RetryBudget()
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._table = CircuitTable(self.circuit, self.clock)
        self._budget = BudgetWindow(self.budget, self.clock)
        #: Calls in flight, latency averages and affinity keys (:mod:`orchestrator.routing`).
        self.routing = MemoryRouting(self.clock)
        #: Rate limits and budget spend (:mod:`orchestrator.capacity`), on the same clock.
        self.capacity = MemoryCapacity(self.clock)

    def admit(self, provider: str) -> Admission:
        """May ``provider`` be called now? At most one half-open probe per cooldown."""
        return self._table.admit(provider)

    def record_success(self, provider: str) -> None:
        """A call succeeded: resets the failure streak, closes a half-open circuit."""
        self._table.record(provider, failed=False)

    def record_failure(self, provider: str, *, retry_after: float | None = None) -> None:
        """A counted failure; ``retry_after`` seconds keeps the circuit open at least that long."""
        self._table.record(provider, failed=True, retry_after=retry_after)

    def record_request(self) -> None:
        """One run started: raises the retry allowance by ``budget.ratio``."""
        self._budget.record_request()

    def last_resort(self, provider: str) -> bool:
        """Every circuit is open: may this run call ``provider``? One such call at a time."""
        return self._table.acquire_last_resort(provider)

    def end_last_resort(self, provider: str, *, succeeded: bool) -> None:
        """The last-resort call ended; its success closes the circuit."""
        self._table.release_last_resort(provider, succeeded=succeeded)

    def try_acquire_retry(self) -> bool:
        """Take one retry token; ``False`` when the budget is spent (fall over, do not retry)."""
        return self._budget.try_acquire()

    def snapshot(self, provider: str) -> ProviderHealth:
        """The provider's circuit state and window counters right now."""
        return self._table.snapshot(provider)

    async def aclose(self) -> None:
        """Nothing to release; present so every store closes the same way."""

    def __repr__(self) -> str:
        return f"MemoryHealthStore(circuit={self.circuit!r}, budget={self.budget!r})"


_default: MemoryHealthStore | None = None
_default_lock = threading.Lock()


def default_health_store() -> MemoryHealthStore:
    """The process-wide store agents share when given none (created on first use)."""
    global _default
    store = _default
    if store is None:
        with _default_lock:
            if _default is None:
                _default = MemoryHealthStore()
            store = _default
    return store


def reset_default_health_store() -> None:
    """Forget the process-wide store so the next call starts fresh (for tests)."""
    global _default
    with _default_lock:
        _default = None
