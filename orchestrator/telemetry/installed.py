"""Whether OpenTelemetry is importable, and the tracer and meter provider to use right now.

The library way: spans and metrics go through the *global* tracer and meter
providers, which are no-ops until the application installs an SDK. While they
are (or while ``opentelemetry-api`` is missing) the engine skips telemetry
entirely. ``opentelemetry`` is imported on the first run, never by
``import orchestrator``.

Checking costs well under a microsecond: the API keeps the installed providers
in module globals, read here directly. Its public getters also look up an
environment variable on every call (about 1 us each on a loaded machine), so
they are used only when that variable names a provider to load, or when a
future API release no longer has the globals.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from orchestrator.telemetry.names import SCOPE

__all__ = ["PerProvider", "api", "meter_provider", "providers", "sdk_only", "tracer", "tracer_of"]

_api: Any = None  # (trace, metrics, context) once imported; False when not importable
_read_tracer_provider: Callable[[], Any] = lambda: None  # noqa: E731
_read_meter_provider: Callable[[], Any] = lambda: None  # noqa: E731
#: (opentelemetry.trace, the metrics API's _internal) when both providers are read from
#: their globals (see _reader): :func:`providers` reads them without a call.
_globals: tuple[Any, Any] | None = None
#: The API's variables naming a provider to load (its getters then load it: read through them).
_TRACER_ENV, _METER_ENV = "OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER"


def api() -> Any:
    """``(opentelemetry.trace, opentelemetry.metrics, opentelemetry.context)``, or ``None``
    without the API."""
    global _api, _read_tracer_provider, _read_meter_provider, _globals
    if _api is None:
        try:
            from opentelemetry import context, metrics, trace
            from opentelemetry.metrics import _internal as metrics_internal
        except ImportError:
            _api = False
        else:
            _read_tracer_provider = _reader(
                trace, "_TRACER_PROVIDER", trace.get_tracer_provider, _TRACER_ENV
            )
            _read_meter_provider = _reader(
                metrics_internal,
                "_METER_PROVIDER",
                metrics.get_meter_provider,
                _METER_ENV,
            )
            direct = _direct(trace, "_TRACER_PROVIDER", _TRACER_ENV) and _direct(
                metrics_internal, "_METER_PROVIDER", _METER_ENV
            )
            _globals = (trace, metrics_internal) if direct else None
            _api = (trace, metrics, context)
    return _api or None


def _direct(module: Any, name: str, env: str) -> bool:
    """Whether the installed provider can be read from ``module``'s global ``name``."""
    return env not in os.environ and hasattr(module, name)


def _reader(module: Any, name: str, getter: Callable[[], Any], env: str) -> Callable[[], Any]:
    """A reader of the installed provider (``None`` while none is), as cheap as it can be."""
    if not _direct(module, name, env):
        return lambda: sdk_only(getter())
    return lambda: getattr(module, name)


def sdk_only(provider: object) -> Any:
    """``provider`` (a global provider as read) when it is an SDK's, else ``None``."""
    if provider is None:
        return None
    # The API package only defines no-op and proxy providers: any other is an SDK's.
    module = type(provider).__module__
    api_own = module.startswith("opentelemetry.trace") or module.startswith("opentelemetry.metrics")
    return None if api_own else provider


class PerProvider:
    """What was made for the installed provider (a tracer, instruments), kept until another
    provider is installed (the SDK allows one a process; tests install several)."""

    __slots__ = ("_lock", "_made")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: tuple[object, Any] = (None, None)

    def get(self, provider: object, make: Callable[[Any], Any]) -> Any:
        """``make(provider)``, made once per provider."""
        made = self._made
        if provider is made[0]:
            return made[1]
        with self._lock:
            if provider is not self._made[0]:
                self._made = (provider, make(provider))
            return self._made[1]


_tracers = PerProvider()


def tracer() -> Any:
    """The global provider's tracer, or ``None`` until an SDK tracer provider is installed."""
    return tracer_of(providers()[0])


def tracer_of(provider: Any) -> Any:
    """``provider``'s tracer (made once), or ``None`` unless it is an SDK's."""
    return None if provider is None else _tracers.get(provider, _sdk_tracer)


def providers() -> tuple[Any, Any]:
    """The global tracer and meter providers installed now (each ``None`` until one is set;
    either may be the API's own no-op): one read of both, for a run to start with."""
    if not (_api or api()):  # every run asks: once imported, no call to learn it
        return None, None
    if _globals is None:
        return _read_tracer_provider(), _read_meter_provider()
    return _globals[0]._TRACER_PROVIDER, _globals[1]._METER_PROVIDER


def _sdk_tracer(provider: Any) -> Any:
    return None if sdk_only(provider) is None else provider.get_tracer(SCOPE)


def meter_provider() -> Any:
    """The global meter provider, or ``None`` until an SDK meter provider is installed
    (a run reads it through :func:`providers`, keeping what it made of it)."""
    return sdk_only(providers()[1])
