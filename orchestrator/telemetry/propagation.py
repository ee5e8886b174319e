"""Trace context for outgoing requests: the ``traceparent`` header when a span is active."""

from __future__ import annotations

import sys
from collections.abc import Mapping

__all__ = ["trace_headers"]


def trace_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus the active span's context (``traceparent``, ``tracestate``,
    ``baggage``: the global propagator's fields), or ``headers`` itself when no
    span is active, so a trace continues into an instrumented gateway.

    Costs one dictionary look-up unless the application imported OpenTelemetry, and
    one more while its context is empty (a gateway's call, most often: no span to send).
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or not sys.modules["opentelemetry.context"].get_current():
        return headers  # an empty context holds no span (get_current_span's own look-up)
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    from opentelemetry import propagate

    carrier = dict(headers)
    propagate.inject(carrier)
    return carrier
