"""``/healthz``, ``/readyz`` and ``/metrics``: what load balancers and Prometheus ask."""

from __future__ import annotations

import os
from typing import Any

from aiohttp import web

from orchestrator.telemetry import EXPOSITION_CONTENT_TYPE, prometheus_exposition

__all__ = ["healthz", "metrics", "readyz"]


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


async def metrics(request: web.Request) -> web.Response:
    """The Prometheus exposition of the chain's metrics (the worker's meter provider: see
    :mod:`providers.serve.meters`), or 501 when the exporter is not installed."""
    data = prometheus_exposition()
    if data is None:
        return web.Response(
            status=501,
            text="metrics unavailable: install the OpenTelemetry SDK and the Prometheus exporter "
            "(pip install 'failover-orchestrator[serve]': opentelemetry-sdk, "
            "opentelemetry-exporter-prometheus)\n",
        )
    return web.Response(body=data, headers={"Content-Type": EXPOSITION_CONTENT_TYPE})
