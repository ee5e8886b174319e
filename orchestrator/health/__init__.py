"""Provider health: circuit breakers per provider and a retry budget, in memory or shared via Redis.

The engine asks a :class:`HealthStore` before each call (``admit``), tells it
how the call went (``record_success`` / ``record_failure``), counts each run
(``record_request``) and asks before each retry (``try_acquire_retry``). A call
is the first attempt on a provider plus its retries in one run, reported once
when it ends: it failed if it was left with a counted failure, it succeeded if
it answered. The engine decides what counts: only transient and unusable
failures are recorded; guardrail refusals, invalid requests, cancellations and
hook errors never are. The store just records what it is told.

Health must never make availability worse, so the defaults are conservative:

- A circuit opens on evidence that a provider is down, never on coincidence
  under concurrency: at least half of the last 30 s of calls failed, counted
  once there are 100 of them (:class:`CircuitBreaker`; "N failures in a row"
  is available but off, since concurrent calls interleave their failures).
  Calls, not attempts: a provider failing half its attempts answers 94% of its
  calls with three retries, and is not down. 100 stays the minimum because with
  ``max_retries=0`` a call is one attempt, and from 20 a 30%-flaky provider
  would reach 50% failures in a fresh window with 6.5% chance (0.003% from 100).
- A ``Retry-After`` the child's policy waits out (``max_retry_after``) is a
  normal retry; only a longer one opens the circuit, for at most
  ``max_cooldown`` (600 s).
- When every circuit a run could use is open, the one whose cooldown ends
  first is still tried, with its normal retries; at most one such last-resort
  call per provider is in flight (others fail fast without a request), and its
  success closes the circuit.
- The retry budget (:class:`RetryBudget`, 50% of requests plus 10/s) covers
  the retries of a provider failing up to a third of its attempts (only retries
  spend it, never a first attempt); beyond that it deliberately refuses
  retries, the guard against retry storms: raise its ``ratio`` for flakier ones.

- :class:`MemoryHealthStore`: one process (the default, see :func:`default_health_store`).
- :class:`RedisHealthStore`: many processes and hosts share circuits, cooldowns
  and the budget; calls stay local and cheap, sync runs in the background.

Every state change emits a structlog event on logger ``orchestrator``:
``circuit_opened``, ``circuit_half_open``, ``circuit_closed`` with ``provider``,
``state``, ``open_until`` (epoch seconds or None) and ``reason`` (one of
``consecutive_failures``, ``failure_ratio``, ``retry_after``, ``probe_failed``,
``cooldown_over``, ``probe_lost``, ``probe_succeeded``, ``last_resort_succeeded``,
``shared``). The Redis
store adds ``health_store_degraded`` (warning, once per outage) and
``health_store_recovered``.
"""

from __future__ import annotations

from orchestrator.health.memory import (
    MemoryHealthStore,
    default_health_store,
    reset_default_health_store,
)
from orchestrator.health.model import (
    Admission,
    CircuitBreaker,
    CircuitStateName,
    HealthStore,
    ProviderHealth,
    RetryBudget,
)
from orchestrator.health.redis.store import RedisHealthStore

__all__ = [
    "Admission",
    "CircuitBreaker",
    "CircuitStateName",
    "HealthStore",
    "MemoryHealthStore",
    "ProviderHealth",
    "RedisHealthStore",
    "RetryBudget",
    "default_health_store",
    "reset_default_health_store",
]
