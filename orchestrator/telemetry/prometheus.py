"""The Prometheus exposition of the metrics, for a ``GET /metrics`` endpoint."""

from __future__ import annotations

__all__ = ["EXPOSITION_CONTENT_TYPE", "prometheus_exposition"]

#: The content type of :func:`prometheus_exposition`'s bytes (Prometheus text format 0.0.4).
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def prometheus_exposition() -> bytes | None:
    """The metrics of the process's Prometheus registry in the text format, or ``None`` when
    ``opentelemetry-exporter-prometheus`` is not installed.

    The application exposes our metrics to it by installing a meter provider with
    a ``PrometheusMetricReader`` (see docs/observability.md); a server (``failover serve``)
    answers ``GET /metrics`` with these bytes. Collecting runs the metric
    callbacks (circuit states): call it off the event loop when it is busy.
    """
    try:
        import opentelemetry.exporter.prometheus  # noqa: F401
        from prometheus_client import REGISTRY, generate_latest
    except ImportError:
        return None
    return generate_latest(REGISTRY)
