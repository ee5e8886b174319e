"""Running totals read at collection time: the metric counters' cheap path.

A counter recorded through the SDK's synchronous instrument costs several
microseconds a call (a measurement object, the attributes hashed as a frozenset,
a lock and an aggregation per reader). A :class:`Tally` keeps a plain number per
label set instead; an OpenTelemetry *observable* counter reads the totals when a
reader collects (a Prometheus scrape, a periodic export), so a call pays a dict
lookup and an addition. Label sets are the engine's cached dicts
(:mod:`orchestrator.telemetry.spans`), kept once per distinct set.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from orchestrator.telemetry.installed import api

__all__ = ["Tally"]


class Tally:
    """Cumulative totals by label set; :meth:`observe` is an observable counter's callback."""

    __slots__ = ("_lock", "_totals")

    def __init__(self, lock: threading.Lock | None = None) -> None:
        # Runs in threads' loops (run_sync) as well; ``lock`` may be shared with other
        # instruments, so that a caller recording into several takes it once.
        self._lock = lock if lock is not None else threading.Lock()
        #: The label set's items -> [the labels, the total (None: not counted yet)].
        self._totals: dict[tuple[tuple[str, Any], ...], list[Any]] = {}

    def add(self, value: float, labels: Mapping[str, Any]) -> None:
        """Add ``value`` to the total of ``labels``."""
        with self._lock:
            entry = self.cell(labels)
            entry[1] = value if entry[1] is None else entry[1] + value

    def cell(self, labels: Mapping[str, Any]) -> list[Any]:
        """``labels``' entry, ``[labels, total]``, made (not exported until counted) on
        first use; the caller holds the lock, and may add to ``[1]`` later without a lookup."""
        key = tuple(labels.items())
        entry = self._totals.get(key)
        if entry is None:
            entry = self._totals[key] = [dict(labels), None]
        return entry

    def observe(self, options: Any = None) -> Iterable[Any]:
        """Every total as an ``Observation`` (called by the SDK on the reader's thread)."""
        with self._lock:
            totals = [
                (labels, value) for labels, value in self._totals.values() if value is not None
            ]
        observation = api()[1].Observation
        return [observation(value, labels) for labels, value in totals]
