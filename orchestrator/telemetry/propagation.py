"""Trace context for outgoing requests: the ``traceparent`` header when a span is active."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["trace_headers"]

#: OpenTelemetry's current context, read (found once the application imported the API).
_current: Callable[[], Any] | None = None


def trace_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus the active span's context (``traceparent``, ``tracestate``,
    ``baggage``: the global propagator's fields), or ``headers`` itself when no
    span is active, so a trace continues into an instrumented gateway.

    Costs one dictionary look-up unless the application imported OpenTelemetry, and
    one read of a context variable more while its context is empty (a gateway's call,
    most often: no span to send).
    """
    current = _current
    if current is None:
        if "opentelemetry.trace" not in sys.modules:
            return headers
        current = _context_reader()
    if not current():
        return headers  # an empty context holds no span (get_current_span's own look-up)
    trace = sys.modules["opentelemetry.trace"]
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    from opentelemetry import propagate

    carrier = dict(headers)
    propagate.inject(carrier)
    return carrier


def _context_reader() -> Callable[[], Any]:
    """The reader of the current context (OpenTelemetry imported): its context variable's
    own ``get`` when the runtime context is the API's default, one ``ContextVar`` fixed
    when the API is imported; else the API's ``get_current``."""
    global _current
    context = sys.modules["opentelemetry.context"]
    var = getattr(getattr(context, "_RUNTIME_CONTEXT", None), "_current_context", None)
    _current = var.get if isinstance(var, ContextVar) else context.get_current
    return _current
