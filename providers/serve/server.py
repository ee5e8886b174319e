"""One gateway worker: load the chain, listen, serve until SIGTERM, then drain.

``run_worker`` is what ``failover serve`` runs in-process (one worker) and in each
child process (``--workers N``, see :mod:`providers.serve.workers`). On SIGTERM or
SIGINT the worker stops accepting connections, lets in-flight requests finish
(up to ``settings.grace`` seconds), closes idle connections and returns. The HTTP
server is ``settings.server``: granian (:mod:`providers.serve.rsgi`) or aiohttp
(:mod:`providers.serve.app`), both serving :class:`~providers.serve.gateway.Gateway`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import warnings
from collections.abc import Callable
from typing import Any

from aiohttp import web

from orchestrator import IgnoredSetting
from orchestrator.config import load_config
from providers.serve.app import build_app
from providers.serve.auth import GatewayKeys
from providers.serve.gateway import Gateway
from providers.serve.meters import install_meter_provider
from providers.serve.models import Models
from providers.serve.protocol import GatewayRunner
from providers.serve.settings import GatewaySettings

__all__ = ["listen_socket", "run_worker", "serve"]

BACKLOG = 1024


def listen_socket(host: str, port: int, *, reuse_port: bool, listen: bool = True) -> socket.socket:
    """A TCP socket bound to ``host:port``; with ``reuse_port`` other processes may bind it too
    (``SO_REUSEPORT``: the kernel spreads connections over every listening worker)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


async def serve(
    models: Models,
    keys: GatewayKeys,
    settings: GatewaySettings,
    sock: socket.socket,
    stop: asyncio.Event,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``models`` on ``sock`` until ``stop`` is set, then drain (see the module docstring),
    on the server ``settings.server`` names."""
    if settings.server == "granian":
        from providers.serve.rsgi import serve_granian

        await serve_granian(Gateway(models, keys, settings), settings, sock, stop, on_ready)
        return
    app = build_app(models, keys, settings)
    runner = GatewayRunner(
        app,
        handler_cancellation=True,  # a client that leaves cancels its run upstream
        keepalive_timeout=settings.idle_timeout,
        shutdown_timeout=settings.grace,
        access_log=None,
    )
    await runner.setup()
    try:
        await web.SockSite(runner, sock, backlog=BACKLOG).start()
        if on_ready is not None:
            on_ready()
        await stop.wait()
    finally:
        await runner.cleanup()


async def _main(
    chain: str,
    keys: GatewayKeys,
    settings: GatewaySettings,
    sock: socket.socket,
    on_ready: Callable[[], None] | None,
) -> None:
    config = load_config(chain)
    install_meter_provider()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        # A worker starts with the circuits the fleet opened (one sync with a shared store,
        # bounded by its timeout) and leaves what it recorded when it drains.
        await config.open_health(stack)
        models = await stack.enter_async_context(Models.from_config(config))
        await serve(models, keys, settings, sock, stop, on_ready)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when it is installed (faster sockets), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], Any] = uvloop.new_event_loop
    return factory


def run_worker(
    chain: str,
    keys: GatewayKeys,
    settings: GatewaySettings,
    sock: socket.socket,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Run one worker to completion in this process (blocking)."""
    # `failover serve` showed the chain file's IgnoredSetting warnings once, before any
    # worker; a client's tool schema is request text, kept out of the gateway's log.
    warnings.simplefilter("ignore", IgnoredSetting)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(_main(chain, keys, settings, sock, on_ready))
