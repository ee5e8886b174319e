"""The gateway's knobs: where to listen and the limits that protect it from its clients."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from orchestrator.units import seconds

__all__ = ["SERVERS", "GatewaySettings", "default_server"]

#: The HTTP servers the gateway runs on (see :mod:`providers.serve.server`).
SERVERS = ("aiohttp", "granian")


def default_server() -> str:
    """``granian`` when it is installed (the serve extra: measured faster, see
    docs/gateway.md), else ``aiohttp``."""
    return "granian" if importlib.util.find_spec("granian") is not None else "aiohttp"


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """Listening address, worker count and per-worker limits.

    ``max_in_flight`` model requests at once per worker (more: 503 + ``Retry-After``);
    ``max_body_bytes`` per request body (more: 413); ``idle_timeout`` seconds for a
    connection to deliver a complete request head, after connecting or after its last
    reply (a slow or silent client is disconnected); ``body_timeout`` seconds to
    receive a body (then 408), and after ``body_grace`` seconds at least
    ``body_min_rate`` bytes a second on average (slower: 408, so a trickling client
    gives its in-flight place back); ``grace`` seconds for in-flight requests to
    finish once SIGTERM arrives; ``public_metrics`` serves ``/metrics`` without a key;
    ``server`` is the HTTP server, one of :data:`SERVERS`.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    max_in_flight: int = 256
    max_body_bytes: int = 16 * 1024 * 1024
    idle_timeout: float = 15.0
    body_timeout: float = 30.0
    body_grace: float = 2.0
    body_min_rate: int = 8192
    grace: float = 30.0
    public_metrics: bool = False
    server: str = "aiohttp"

    def __post_init__(self) -> None:
        for name in ("workers", "max_in_flight", "max_body_bytes", "body_min_rate"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GatewaySettings.{name}={value!r} must be a positive int")
        if self.server not in SERVERS:
            raise ValueError(f"GatewaySettings.server={self.server!r} must be one of {SERVERS}")
        if not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ValueError(f"GatewaySettings.port={self.port!r} must be 0-65535")
        for name in ("idle_timeout", "body_timeout", "body_grace", "grace"):
            object.__setattr__(self, name, seconds(getattr(self, name), f"GatewaySettings.{name}"))
