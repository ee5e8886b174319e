"""Histograms tallied in plain numbers and handed to the SDK's readers as they collect.

OpenTelemetry has no observable histogram, and a synchronous record costs several
microseconds (a measurement object, its attributes hashed, a lock and an
aggregation per reader): three or four a call were most of the metrics' cost. A
:class:`HistogramTally` keeps bucket counts, sum, count, min and max per label
set; :func:`attach` wraps the collect function of each reader of an SDK
``MeterProvider`` so that every collection (a Prometheus scrape, a periodic
export, an in-memory read) carries the tallies as cumulative histogram points of
our scope, with the names, units and buckets the synchronous histograms had. It
attaches only where that is what the synchronous path would have produced: an
SDK provider without views whose readers all want cumulative histograms;
elsewhere :mod:`orchestrator.telemetry.instruments` keeps the SDK's histograms.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["HistogramTally", "add", "attach"]


class HistogramTally:
    """One histogram's points by label set (explicit buckets, cumulative)."""

    __slots__ = ("_lock", "_points", "bounds", "description", "name", "start", "unit")

    def __init__(
        self,
        name: str,
        unit: str,
        description: str,
        bounds: Sequence[float],
        lock: threading.Lock | None = None,
    ) -> None:
        self.name, self.unit, self.description = name, unit, description
        self.bounds = tuple(bounds)
        self.start = time.time_ns()
        #: Guards the points (``lock``: one shared with the other instruments, so that a
        #: caller recording into several at once takes it once).
        self._lock = lock if lock is not None else threading.Lock()
        #: The label set's items -> [labels, bucket counts, sum, min, max] (the count is the
        #: buckets' sum, taken when collected: one addition a record fewer).
        self._points: dict[tuple[tuple[str, Any], ...], list[Any]] = {}

    def record(self, value: float, labels: Mapping[str, Any]) -> None:
        """One value of ``labels``' series (as ``Histogram.record``)."""
        with self._lock:
            add(self.point(labels), self.bounds, value)

    def point(self, labels: Mapping[str, Any]) -> list[Any]:
        """``labels``' point, made (empty, not exported) on first use; the caller holds the
        lock. Kept: :func:`add` may record into it later without a lookup."""
        key = tuple(labels.items())
        point = self._points.get(key)
        if point is None:
            buckets = [0] * (len(self.bounds) + 1)
            point = self._points[key] = [dict(labels), buckets, 0, math.inf, -math.inf]
        return point

    def metric(self, now: int) -> Any:
        """The SDK's ``Metric`` of these points at ``now`` (ns), or ``None`` with none."""
        from opentelemetry.sdk.metrics.export import (
            AggregationTemporality,
            Histogram,
            HistogramDataPoint,
            Metric,
        )

        with self._lock:
            points = [(p[0], list(p[1]), p[2], p[3], p[4]) for p in self._points.values()]
        data = [
            HistogramDataPoint(labels, self.start, now, count, total, buckets, self.bounds, lo, hi)
            for labels, buckets, total, lo, hi in points
            if (count := sum(buckets))  # a point made ahead shows once recorded
        ]
        if not data:
            return None
        histogram = Histogram(data, AggregationTemporality.CUMULATIVE)
        return Metric(self.name, self.description, self.unit, histogram)


def add(point: list[Any], bounds: tuple[float, ...], value: float) -> None:
    """One ``value`` into ``point`` (a :meth:`HistogramTally.point`; its lock held)."""
    point[1][bisect_left(bounds, value)] += 1  # the SDK's buckets: (bound[i-1], bound[i]]
    point[2] += value
    if value < point[3]:
        point[3] = value
    if value > point[4]:
        point[4] = value


def attach(provider: Any, scope: str, tallies: Sequence[HistogramTally]) -> bool:
    """Make every reader of ``provider`` collect ``tallies`` too (in ``scope``); False, and
    nothing changed, when that would differ from the SDK's own histograms (views, a
    reader asking for delta histograms) or the SDK is not the one this was written for."""
    try:
        from opentelemetry.sdk.metrics._internal.instrument import _Histogram
        from opentelemetry.sdk.metrics.export import AggregationTemporality

        readers = list(provider._metric_readers)
        if provider._sdk_config.views or not readers:
            return False
        for reader in readers:
            wanted = reader._instrument_class_temporality[_Histogram]
            if wanted != AggregationTemporality.CUMULATIVE or reader._collect is None:
                return False
    except (ImportError, AttributeError, KeyError, TypeError):
        return False
    resource = provider._sdk_config.resource
    for reader in readers:
        reader._collect = _collecting(reader._collect, resource, scope, tallies)
    return True


def _collecting(collect: Any, resource: Any, scope: str, tallies: Sequence[HistogramTally]) -> Any:
    def collect_with_tallies(reader: Any, timeout_millis: float = 10_000) -> Any:
        return _with(collect(reader, timeout_millis=timeout_millis), resource, scope, tallies)

    return collect_with_tallies


def _with(data: Any, resource: Any, scope: str, tallies: Sequence[HistogramTally]) -> Any:
    """``data`` (the SDK's collection, maybe ``None``) with the tallies' metrics in ``scope``."""
    from opentelemetry.sdk.metrics.export import MetricsData, ResourceMetrics, ScopeMetrics
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    now = time.time_ns()
    ours = [m for m in (t.metric(now) for t in tallies) if m is not None]
    if not ours:
        return data
    resources = list(data.resource_metrics) if data is not None else []
    if not resources:
        resources = [ResourceMetrics(resource, [], "")]
    first = resources[0]
    scopes = list(first.scope_metrics)
    for i, found in enumerate(scopes):
        if found.scope.name == scope:
            scopes[i] = ScopeMetrics(found.scope, [*found.metrics, *ours], found.schema_url)
            break
    else:
        scopes.append(ScopeMetrics(InstrumentationScope(scope), ours, ""))
    resources[0] = ResourceMetrics(first.resource, scopes, first.schema_url)
    return MetricsData(resources)
