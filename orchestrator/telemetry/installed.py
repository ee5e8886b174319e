"""Whether OpenTelemetry is importable, and the tracer and instruments to use right now.

The library way: spans and metrics go through the *global* tracer and meter
providers, which are no-ops until the application installs an SDK. While they
are (or while ``opentelemetry-api`` is missing) the engine skips telemetry
entirely, for the cost of two look-ups per run. ``opentelemetry`` is imported on
the first run, never by ``import orchestrator``.
"""

from __future__ import annotations

from typing import Any

from orchestrator.telemetry.names import SCOPE

__all__ = ["api", "meter_provider", "tracer"]

_api: Any = None  # (trace, metrics) once imported; False when not importable
_tracer: tuple[object, Any] = (None, None)  # (provider, its tracer)


def api() -> Any:
    """``(opentelemetry.trace, opentelemetry.metrics)``, or ``None`` without the API."""
    global _api
    if _api is None:
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            _api = False
        else:
            _api = (trace, metrics)
    return _api or None


def _real(provider: object) -> bool:
    # The API package only defines no-op and proxy providers: any other is an SDK's.
    module = type(provider).__module__
    return not (
        module.startswith("opentelemetry.trace") or module.startswith("opentelemetry.metrics")
    )


def tracer() -> Any:
    """The global provider's tracer, or ``None`` until an SDK tracer provider is installed."""
    global _tracer
    mods = api()
    if mods is None:
        return None
    provider = mods[0].get_tracer_provider()
    if provider is _tracer[0]:
        return _tracer[1]
    found = provider.get_tracer(SCOPE) if _real(provider) else None
    _tracer = (provider, found)
    return found


def meter_provider() -> Any:
    """The global meter provider, or ``None`` until an SDK meter provider is installed."""
    mods = api()
    if mods is None:
        return None
    provider = mods[1].get_meter_provider()
    return provider if _real(provider) else None
