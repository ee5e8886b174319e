"""The real OpenTelemetry SDK, installed as the global providers for one test and removed after.

``otel`` gives the test an in-memory span exporter, an in-memory metric reader
and a processor that knows which spans are still open. The SDK is a dev
dependency; without it these tests skip, saying how to get it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="needs opentelemetry-sdk: run `make .venv/.installed` (dev extra)"
)

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.util._once import Once

from tests.orchestrator.health.redis.conftest import prefix, redis_server  # noqa: F401


class OpenSpans(SpanProcessor):
    """Remembers the spans started and not yet ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        with self.lock:
            self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self.lock:
            self.open.pop(span.context.span_id, None)  # type: ignore[union-attr]


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    open_spans: OpenSpans

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def attempt_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.kind == trace.SpanKind.CLIENT]

    def run_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith("failover ")]

    def points(self, name: str) -> list[Any]:
        """Every data point of metric ``name`` collected now."""
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for rm in data.resource_metrics if data is not None else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        out.extend(metric.data.data_points)
        return out


def install(tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None) -> None:
    """Make these the global providers (the SDK allows it once per process: reset first)."""
    uninstall()
    if tracer_provider is not None:
        trace.set_tracer_provider(tracer_provider)
    if meter_provider is not None:
        metrics.set_meter_provider(meter_provider)


def uninstall() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    open_spans = OpenSpans()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(open_spans)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    install(tracer_provider, meter_provider)
    try:
        yield Otel(exporter, reader, open_spans)
    finally:
        uninstall()
        tracer_provider.shutdown()
        meter_provider.shutdown()


@pytest.fixture
def meter_with(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Install a meter provider with the given readers (``install_meter(reader)``)."""
    providers: list[MeterProvider] = []

    def install_meter(*readers: MetricReader) -> MeterProvider:
        provider = MeterProvider(metric_readers=list(readers))
        install(None, provider)
        providers.append(provider)
        return provider

    try:
        yield install_meter
    finally:
        uninstall()
        for provider in providers:
            provider.shutdown()
