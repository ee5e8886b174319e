"""Capacity: rate limits per provider and budgets per provider and chain.

- :class:`Limits` (``rpm``, ``tpm``, ``max_concurrency``) and :class:`Budget`
  (``usd`` per ``minute``/``hour``/``day``/``month``): the values a user writes.
- :class:`MemoryCapacity`: one process's limiters and spend (the default).
  :class:`~orchestrator.health.RedisHealthStore` shares them between processes
  with one atomic script per call (:mod:`orchestrator.capacity.redis`).

The engine reserves before each call and settles after
(:mod:`orchestrator.engine.capacity`).
"""

from __future__ import annotations

from orchestrator.capacity.memory import MemoryCapacity, default_capacity, reset_default_capacity
from orchestrator.capacity.model import CapacityStore, Charge, Refusal, Ticket, Want, used_by
from orchestrator.capacity.values import PERIODS, Budget, Limits, Period, checked, period_bounds

__all__ = [
    "PERIODS",
    "Budget",
    "CapacityStore",
    "Charge",
    "Limits",
    "MemoryCapacity",
    "Period",
    "Refusal",
    "Ticket",
    "Want",
    "checked",
    "default_capacity",
    "period_bounds",
    "reset_default_capacity",
    "used_by",
]
