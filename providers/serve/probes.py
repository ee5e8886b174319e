"""``/healthz``, ``/readyz`` and ``/metrics``: what load balancers and Prometheus ask."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from orchestrator.telemetry import EXPOSITION_CONTENT_TYPE, prometheus_exposition
from providers.serve.exchange import Reply, json_reply
from providers.serve.models import Models

__all__ = ["healthz", "metrics", "readyz"]

_REFRESH_TIMEOUT = 1.0  # seconds a scrape waits for a shared store's capacity figures


def healthz() -> Reply:
    """Alive: the worker answers (with its process id, to tell workers apart)."""
    return json_reply(200, {"status": "ok", "pid": os.getpid()})


def _store_state(store: Any) -> str:
    """A shared store's ``state`` (``ok``, ``degraded``, ``idle``), or ``local`` (in-process)."""
    state = getattr(store, "state", None)
    return state if isinstance(state, str) else "local"


def readyz(models: Models) -> Reply:
    """Ready: the chain is loaded; with a shared health store, whether it answers.

    A store that does not answer leaves the gateway ``degraded`` but ready (200):
    each worker then keeps health in memory, and the chain still serves. A store
    is ``idle`` until the first call syncs it.
    """
    stores = [_store_state(s) for s in models.health_stores()]
    status = "degraded" if "degraded" in stores else "ready"
    return json_reply(200, {"status": status, "models": len(models.names()), "stores": stores})


async def metrics(stores: list[Any] | None = None) -> Reply:
    """The Prometheus exposition of the chain's metrics (the worker's meter provider: see
    :mod:`providers.serve.meters`), or 501 when the exporter is not installed. A shared
    store's capacity figures are read first (one bounded round trip each)."""
    for store in stores or ():
        refresh = getattr(getattr(store, "capacity", None), "refresh", None)
        if refresh is not None:
            with contextlib.suppress(TimeoutError):  # the gauges show the figures read last
                await asyncio.wait_for(refresh(), _REFRESH_TIMEOUT)
    data = prometheus_exposition()
    if data is None:
        return Reply(
            501,
            b"metrics unavailable: install the OpenTelemetry SDK and the Prometheus exporter "
            b"(pip install 'failover-orchestrator[serve]': opentelemetry-sdk, "
            b"opentelemetry-exporter-prometheus)\n",
            {"Content-Type": "text/plain; charset=utf-8"},
        )
    return Reply(200, data, {"Content-Type": EXPOSITION_CONTENT_TYPE})
