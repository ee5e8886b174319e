"""The gateway on granian (``failover serve --server granian``): Rust parses and writes HTTP.

granian's RSGI interface hands each request to :class:`GatewayRSGI` as a scope and
a protocol; this module adapts them to the gateway's
:class:`~providers.serve.exchange.Exchange` and writes its
:class:`~providers.serve.exchange.Reply` back (RSGI measured faster than ASGI on
granian: see docs/gateway.md). :func:`serve_granian` runs one granian worker on
the gateway's own socket, in the caller's event loop, and drains it on ``stop``.
A client that leaves cancels its request's task, and with it the run upstream
(watched from when the request is 50 ms old: :class:`GatewayRSGI`).
A request granian cannot parse is answered by granian (a bare 400) and never
reaches Python, so none of its bytes is echoed or logged.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterable, Callable
from typing import Any

from providers.serve.exchange import Reply, Sink
from providers.serve.gateway import Gateway
from providers.serve.settings import GatewaySettings

__all__ = ["GatewayRSGI", "serve_granian"]

#: Requests granian lets into Python at once, per worker (above ``max_in_flight``: the
#: gateway sheds model requests itself, in the client's format; probes must still pass).
_BACKPRESSURE = 4096


class _Sink:
    __slots__ = ("transport",)

    def __init__(self, transport: Any) -> None:
        self.transport = transport

    async def write(self, data: bytes) -> None:
        if self.transport is None:
            raise ConnectionResetError("the stream has ended")
        try:
            await self.transport.send_bytes(data)
        except RuntimeError as exc:  # RSGIProtocolClosed: the client left
            raise ConnectionResetError("the client closed the connection") from exc

    async def end(self) -> None:
        # granian ends the stream when its transport is freed: a reference kept (by an
        # exception's traceback, say) would hold the client waiting for the last chunk.
        self.transport = None


class _Exchange:
    """An RSGI request as the gateway reads it."""

    __slots__ = ("headers", "method", "path", "protocol", "scheme", "scope", "sink")

    def __init__(self, scope: Any, protocol: Any) -> None:
        self.scope, self.protocol = scope, protocol
        self.method, self.path, self.scheme = scope.method, scope.path, scope.scheme
        self.headers = scope.headers
        self.sink: _Sink | None = None

    def header(self, name: str) -> str | None:
        value: str | None = self.headers.get(name)
        return value

    def local(self) -> tuple[str, int] | None:
        host, _, port = str(self.scope.server).rpartition(":")
        return (host, int(port)) if port.isdigit() else None

    def body(self) -> AsyncIterable[bytes]:
        # granian's protocol itself (its last chunk is empty): a generator around it cost a
        # step per chunk, and a task to close it when the reader stops at the declared length.
        chunks: AsyncIterable[bytes] = self.protocol
        return chunks

    async def stream(self, headers: dict[str, str]) -> Sink:
        self.sink = _Sink(self.protocol.response_stream(200, list(headers.items())))
        return self.sink


def _headers(reply: Reply) -> list[tuple[str, str]]:
    headers = list(reply.headers.items())
    if reply.close:
        headers.append(("connection", "close"))
    return headers


class GatewayRSGI:
    """``gateway`` as an RSGI application; ``active`` counts the requests in Python now.

    A client that leaves cancels its request's task, and with it the run upstream. The
    watch on a request's client starts once the request is ``watch_after`` seconds old
    (so within twice that of the client leaving). A watch per request (a task around
    granian's ``client_disconnect``, cancelled when the request ends) made granian hand each
    cancelled watch to its blocking thread, which takes the GIL to drop it: at 1,000 req/s
    those handoffs stalled the worker (added p99 36-96 ms in 3 of 7 quiet runs, under 3.4 ms
    in 7 of 7 since). Most requests end before a client that left could be missed."""

    def __init__(self, gateway: Gateway, watch_after: float = 0.05) -> None:
        self.gateway = gateway
        self.active = 0
        self.watch_after = watch_after
        self._young: dict[asyncio.Task[Any], Any] = {}  # task -> protocol, not watched yet
        self._older: dict[asyncio.Task[Any], Any] = {}  # young at the last sweep
        self._watched: dict[asyncio.Task[Any], asyncio.Future[Any]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":
            return
        ex = _Exchange(scope, protocol)
        self.active += 1
        task: Any = asyncio.current_task()  # granian runs each request as an asyncio task
        self._young[task] = protocol
        if self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep())
        try:
            reply = await self.gateway.handle(ex)
        except asyncio.CancelledError:
            gone = self._watched.get(task)
            if gone is not None and gone.done():  # the client left: nobody to answer
                return
            raise
        finally:
            self.active -= 1
            if self._young.pop(task, None) is None and self._older.pop(task, None) is None:
                gone = self._watched.pop(task, None)
                if gone is not None:
                    gone.cancel()
        if reply is not None:
            protocol.response_bytes(reply.status, _headers(reply), reply.body)
        elif ex.sink is None:
            protocol.response_empty(499, [])

    async def _sweep(self) -> None:
        """Every ``watch_after`` seconds, watch the clients of the requests that were young
        at the last sweep; ends when no request is in Python (the next one restarts it)."""
        try:
            while self._young or self._older:
                await asyncio.sleep(self.watch_after)
                older, self._older, self._young = self._older, self._young, {}
                for task, protocol in older.items():
                    try:
                        gone = asyncio.ensure_future(protocol.client_disconnect())
                    except RuntimeError:  # granian closed the protocol: nothing to watch
                        continue
                    gone.add_done_callback(lambda _, task=task: task.cancel())
                    self._watched[task] = gone
        finally:
            self._sweeper = None


async def serve_granian(
    gateway: Gateway,
    settings: GatewaySettings,
    sock: socket.socket,
    stop: asyncio.Event,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``gateway`` on ``sock`` (bound; listened on here) until ``stop`` is set, then
    let the requests in Python finish, up to ``settings.grace`` seconds."""
    try:
        from granian._granian import SocketHolder, WorkerSignal
        from granian.constants import HTTPModes, TaskImpl
        from granian.http import HTTP1Settings
        from granian.server.embed import Server
    except ImportError as exc:
        raise RuntimeError(
            "failover serve --server granian needs granian: "
            "pip install 'failover-orchestrator[serve]'"
        ) from exc
    from providers.serve.server import BACKLOG

    app = GatewayRSGI(gateway)
    sock.listen(BACKLOG)
    holding: Any = SocketHolder  # (fd, is_unix_socket, backlog): granian owns the copy
    holder = holding(os.dup(sock.fileno()), False, BACKLOG)
    signal = WorkerSignal()
    http1 = HTTP1Settings(header_read_timeout=int(settings.idle_timeout * 1000))
    ssl: tuple[Any, ...] = (False, None, None, None, "tls13", None, [], False)
    args = (1, 512, 1, 30, _BACKPRESSURE, TaskImpl.asyncio, HTTPModes.http1, http1, None)
    spawn: Any = Server._spawn_rsgi_worker  # granian's own embedded worker, on our socket
    worker = asyncio.ensure_future(
        spawn(1, signal, app, (None, holder), *args, False, None, None, ssl, {})
    )
    stopped = asyncio.ensure_future(stop.wait())
    try:
        if on_ready is not None:
            on_ready()
        await asyncio.wait((stopped, worker), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        signal.set()
        await worker
        await _drained(app, settings.grace)


async def _drained(app: GatewayRSGI, grace: float) -> None:
    """Until no request is in Python, or ``grace`` seconds have passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while app.active and loop.time() < deadline:
        await asyncio.sleep(0.05)
