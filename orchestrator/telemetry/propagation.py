"""Trace context for outgoing requests: the ``traceparent`` header when a span is active."""

from __future__ import annotations

import sys
from collections.abc import Mapping

__all__ = ["trace_headers"]


def trace_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus the active span's context (``traceparent``, ``tracestate``,
    ``baggage``: the global propagator's fields), or ``headers`` itself when no
    span is active, so a trace continues into an instrumented gateway.

    Costs one dictionary look-up unless the application imported OpenTelemetry.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or not trace.get_current_span().get_span_context().is_valid:
        return headers
    from opentelemetry import propagate

    carrier = dict(headers)
    propagate.inject(carrier)
    return carrier
