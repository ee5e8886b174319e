"""``/healthz``, ``/readyz`` and ``/metrics``: what load balancers and Prometheus ask."""

from __future__ import annotations

import importlib
import os
from typing import Any

from aiohttp import web

__all__ = ["healthz", "metrics", "readyz"]

_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


async def healthz(request: web.Request) -> web.Response:
    """Alive: the worker answers (with its process id, to tell workers apart)."""
    return web.json_response({"status": "ok", "pid": os.getpid()})


def _store_state(store: Any) -> str:
    """A shared store's ``state`` (``ok``, ``degraded``, ``idle``), or ``local`` (in-process)."""
    state = getattr(store, "state", None)
    return state if isinstance(state, str) else "local"


async def readyz(request: web.Request) -> web.Response:
    """Ready: the chain is loaded; with a shared health store, whether it answers.

    A store that does not answer leaves the gateway ``degraded`` but ready (200):
    each worker then keeps health in memory, and the chain still serves. A store
    is ``idle`` until the first call syncs it.
    """
    from providers.serve.app import MODELS

    models = request.app[MODELS]
    stores = [_store_state(s) for s in models.health_stores()]
    status = "degraded" if "degraded" in stores else "ready"
    return web.json_response({"status": status, "models": len(models.names()), "stores": stores})


def _exposition() -> bytes | None:
    """``orchestrator.telemetry.prometheus_exposition()`` when that module exists (issue 12)."""
    try:
        telemetry = importlib.import_module("orchestrator.telemetry")
    except ImportError:
        raise LookupError("this build has no orchestrator.telemetry (metrics, issue 12)") from None
    expose = getattr(telemetry, "prometheus_exposition", None)
    if expose is None:
        raise LookupError("orchestrator.telemetry has no prometheus_exposition()")
    data: bytes | None = expose()
    return data


async def metrics(request: web.Request) -> web.Response:
    """The Prometheus exposition of the chain's metrics, or 501 saying why there is none."""
    try:
        data = _exposition()
    except LookupError as exc:
        return web.Response(status=501, text=f"metrics unavailable: {exc}\n")
    if data is None:
        return web.Response(
            status=501,
            text="metrics unavailable: install the OpenTelemetry SDK and the Prometheus "
            "exporter (pip install 'failover-orchestrator[otel]')\n",
        )
    return web.Response(body=data, headers={"Content-Type": _PROMETHEUS})
