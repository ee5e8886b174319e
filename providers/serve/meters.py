"""The gateway's meter provider: what makes ``GET /metrics`` show the chain's metrics.

The library emits metrics through OpenTelemetry's *global* meter provider, a
no-op until a program installs an SDK one. ``failover serve`` is that program:
each worker, as it starts, installs an SDK ``MeterProvider`` read by a
``PrometheusMetricReader`` (which registers with prometheus_client's default
registry, the one ``prometheus_exposition()`` writes out) when the SDK and the
exporter are installed (the ``serve`` and dev extras) and no SDK provider is
installed yet (``opentelemetry-instrument failover serve ...`` installs its own
from ``OTEL_*`` variables: that one is kept). Without them ``/metrics`` answers
501 saying what to install. ``OTEL_SDK_DISABLED=true`` (OpenTelemetry's own switch)
leaves metrics off, and their cost per call with them.

Each worker process has its own provider and counters: with ``--workers N`` a
scrape is answered by whichever worker the kernel hands the connection, and
shows that worker's counts only (``target_info`` names it by
``service_instance_id``, ``host:pid``).
"""

from __future__ import annotations

import os
import socket

__all__ = ["install_meter_provider"]


def install_meter_provider() -> bool:
    """Install the Prometheus-read SDK meter provider globally; False when one was installed
    already or the SDK or the exporter is missing."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    try:
        from opentelemetry import metrics
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        return False
    if isinstance(metrics.get_meter_provider(), MeterProvider):
        return False
    resource = Resource.create(
        {
            "service.name": "failover-serve",
            "service.instance.id": f"{socket.gethostname()}:{os.getpid()}",
        }
    )
    reader = PrometheusMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader], resource=resource))
    return True
