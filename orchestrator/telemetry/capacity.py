"""Gauges of capacity, read at collection: each limiter's use and each budget's spend.

``failover.capacity.used`` {``failover.limiter``, ``failover.capacity.kind`` = ``rpm`` |
``tpm`` | ``concurrency``} and ``failover.budget.spent`` {``failover.budget.scope``}
are observable gauges: nothing is recorded per call; a collection (a Prometheus
scrape) reads ``usage()`` of the capacity stores of the agents that ran and of the
process's default store. Labels are limiter and budget names (provider names, agent
names, gateway key ids): bounded by the configuration, never a key or a prompt. A
store's ``usage()`` is its local view, without network I/O (for Redis, the figures
:meth:`~orchestrator.capacity.redis.RedisCapacity.refresh` last read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from orchestrator.capacity.memory import default_capacity
from orchestrator.telemetry import names as n
from orchestrator.telemetry.installed import api

__all__ = ["CapacityGauges"]

#: ``usage()``'s figure behind each ``failover.capacity.kind``.
_KINDS = (("rpm", "requests"), ("tpm", "tokens"), ("concurrency", "in_flight"))


class CapacityGauges:
    """The two gauges on ``meter``, reading the stores ``stores()`` lists when collected."""

    __slots__ = ("_stores",)

    def __init__(self, meter: Any, stores: Callable[[], Iterable[Any]]) -> None:
        self._stores = stores
        meter.create_observable_gauge(
            n.METRIC_CAPACITY,
            callbacks=[self._used],
            unit="1",
            description="Each limiter's use in its window: requests, tokens, calls in flight.",
        )
        meter.create_observable_gauge(
            n.METRIC_BUDGET,
            callbacks=[self._spent],
            unit="USD",
            description="Each budget's spend in its current period.",
        )

    def _figures(self) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
        """Use by (limiter, kind) and spend by scope, summed over the distinct stores."""
        used: dict[tuple[str, str], float] = {}
        spent: dict[str, float] = {}
        stores = {id(s): s for s in (default_capacity(), *self._stores())}
        for store in stores.values():
            try:
                usage = store.usage()
            except Exception:  # a store must not break the exporter
                continue
            for name, figures in usage.items():
                if "spent_usd" in figures:  # a budget's "<scope>:<period>"
                    scope = name.rpartition(":")[0]
                    spent[scope] = spent.get(scope, 0.0) + figures["spent_usd"]
                    continue
                for kind, field in _KINDS:
                    key = (name, kind)
                    used[key] = used.get(key, 0.0) + figures.get(field, 0.0)
        return used, spent

    def _used(self, options: Any = None) -> list[Any]:
        observation = api()[1].Observation
        used = self._figures()[0]
        return [
            observation(value, {n.LIMITER: name, n.CAPACITY_KIND: kind})
            for (name, kind), value in used.items()
        ]

    def _spent(self, options: Any = None) -> list[Any]:
        observation = api()[1].Observation
        spent = self._figures()[1]
        return [observation(value, {n.BUDGET_SCOPE: scope}) for scope, value in spent.items()]
