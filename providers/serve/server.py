"""One gateway worker: load the chain, listen, serve until SIGTERM, then drain.

``run_worker`` is what ``failover serve`` runs in-process (one worker) and in each
child process (``--workers N``, see :mod:`providers.serve.workers`). On SIGTERM or
SIGINT the worker stops accepting connections, lets in-flight requests finish
(up to ``settings.grace`` seconds), closes idle connections and returns. The HTTP
server is ``settings.server``: granian (:mod:`providers.serve.rsgi`) or aiohttp
(:mod:`providers.serve.app`), both serving :class:`~providers.serve.gateway.Gateway`.
Before it accepts, a worker settles its heap (:func:`settle_heap`): the garbage
collector's passes were 10% of its CPU under load, most of them re-scanning what
the chain file and the libraries loaded at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
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

__all__ = ["listen_socket", "run_worker", "serve", "settle_heap"]

BACKLOG = 1024
#: Allocations between two young-generation collections in a worker (CPython: 700). A
#: request allocates hundreds of objects that die by reference count; most of the rest are
#: a run's few reference cycles, so collecting less often frees the same at a fraction of
#: the passes (gc time per request, loaded: 40 -> 16 us).
GEN0_THRESHOLD = 10_000


def settle_heap() -> None:
    """Once, when a worker has loaded its chain: collect what loading left, then exempt every
    object alive now from later collections (``gc.freeze``: a full pass scanned them all,
    38 ms each under load, about every second), and collect the young generation every
    :data:`GEN0_THRESHOLD` allocations. The worker's process only: not for a library user."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, *gc.get_threshold()[1:])


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
        settle_heap()
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
