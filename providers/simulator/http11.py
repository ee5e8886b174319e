"""A minimal HTTP/1.1 server on asyncio, just enough for the simulated providers.

Why not aiohttp.web: the simulator must stay far below the cost of the clients
it serves in a benchmark (200 concurrent calls on two cores), and aiohttp's
server spent about twice the CPU per request (127 vs 60 us at 200
in flight, measured with bench/simulator_alone.py). Requests are parsed by
llhttp through ``httptools`` (what uvicorn uses), so framing is strict: a bad
Content-Length or chunk size is answered 400, ``Expect: 100-continue`` gets its
interim reply. Supported: keep-alive, pipelining (answered one at a time, in
order), Content-Length and chunked request bodies, chunked responses for streams.
Replies that need no waiting are written from ``data_received`` without a task.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote

import httptools

__all__ = ["Exchange", "Handler", "HTTPServer"]

_log = logging.getLogger("providers.simulator")
_MAX_HEAD = 64 * 1024
_MAX_PIPELINED = 64  # parsed requests waiting for their turn; reading pauses above
_REASONS = {s.value: s.phrase for s in HTTPStatus}
_REASONS[529] = "Site is overloaded"


class _Date:
    """The ``Date`` header value, formatted once a second."""

    second = -1
    value = b""

    @classmethod
    def get(cls) -> bytes:
        now = int(time.time())
        if now != cls.second:
            cls.second = now
            cls.value = email.utils.formatdate(now, usegmt=True).encode()
        return cls.value


def _head(status: int, headers: dict[str, str], framing: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}".encode()]
    lines.extend(f"{k}: {v}".encode("latin-1") for k, v in headers.items())
    lines.append(b"Date: " + _Date.get())
    lines.append(b"Server: failover-simulated")
    lines.append(framing)
    return b"\r\n".join(lines) + b"\r\n\r\n"


class Exchange:
    """One request and the means to answer it (a complete reply or a stream)."""

    __slots__ = ("_conn", "_keep_alive", "body", "headers", "method", "path", "query", "target")

    def __init__(
        self,
        conn: _Connection,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        keep_alive: bool = True,
        target: str = "",
    ) -> None:
        self._conn = conn
        self.target = target  # as received, not decoded: what a signature covers
        self._keep_alive = keep_alive
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body

    def send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        """Write a complete reply."""
        self._conn.write(_head(status, headers, b"Content-Length: %d" % len(body)) + body)

    def start_stream(self, status: int, headers: dict[str, str]) -> None:
        """Write the head of a chunked reply."""
        self._conn.write(_head(status, headers, b"Transfer-Encoding: chunked"))

    def write_chunk(self, data: bytes) -> None:
        """Write one chunk of a chunked reply."""
        if data:
            self._conn.write(b"%x\r\n%b\r\n" % (len(data), data))

    def end_stream(self) -> None:
        """Write the last chunk: the reply is complete."""
        self._conn.write(b"0\r\n\r\n")

    def send_partial(
        self, status: int, headers: dict[str, str], declared: int, data: bytes
    ) -> None:
        """Write a head announcing ``declared`` bytes, then only ``data``."""
        self._conn.write(_head(status, headers, b"Content-Length: %d" % declared) + data)

    def abort(self) -> None:
        """Drop the connection now (the client sees a reset / incomplete body)."""
        self._conn.abort()

    def backlog(self) -> int | None:
        """Bytes written but not yet sent (None once the client went away): a long
        writer waits while it is high, so the server never buffers a whole body."""
        transport = self._conn._transport
        if transport is None or transport.is_closing():
            return None
        return transport.get_write_buffer_size()


Handler = Callable[[Exchange], Coroutine[Any, Any, None] | None]


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the request line and headers exceed ``_MAX_HEAD``."""


class _Connection(asyncio.Protocol):
    """One client connection: llhttp (``httptools``) parses, replies go out in order.

    Requests are answered one at a time; pipelined ones wait in ``_ready`` (reading
    pauses while many wait). Bad framing is answered 400 (after the replies to the
    requests before it) and the connection closed.
    """

    def __init__(self, server: HTTPServer) -> None:
        self._server = server
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: deque[Exchange] = deque()
        self._error: tuple[int, str] | None = None  # answered once the queue drains
        self._continue = False  # a request waits for "100 Continue" before its body
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._head_size = 0
        self._keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._server.connections.discard(self)
        if self._task is not None:
            self._task.cancel()

    def write(self, data: bytes) -> None:
        if self._transport is not None:
            self._transport.write(data)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- parser callbacks (httptools calls them from feed_data) ------------------------

    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._head_size = b"", {}, [], 0

    def on_url(self, url: bytes) -> None:
        self._grow_head(len(url))
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._grow_head(len(name) + len(value))
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def _grow_head(self, size: int) -> None:
        self._head_size += size
        if self._head_size > _MAX_HEAD:
            raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()
        if self._headers.get("expect", "").lower() == "100-continue":
            self._continue = True
            if self._task is None and not self._ready:
                self._send_continue()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        target = self._url.decode("latin-1")
        path, _, raw_query = target.partition("?")
        if "%" in path:
            path = unquote(path)
        query = dict(parse_qsl(raw_query)) if raw_query else {}
        method = self._parser.get_method().decode("latin-1")
        body = b"".join(self._body)
        self._ready.append(
            Exchange(self, method, path, query, self._headers, body, self._keep_alive, target)
        )
        self._continue = False

    # -- flow ----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._error is not None:
            return  # past bad framing nothing is parsed; the 400 is on its way
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._error = (400, "protocol upgrade not supported")
        except httptools.HttpParserCallbackError as exc:
            if not isinstance(exc.__context__, _HeadTooLarge):
                raise
            self._error = (431, "request head too large")
        except httptools.HttpParserError as exc:
            self._error = (400, f"malformed request: {exc}")
        if len(self._ready) > _MAX_PIPELINED and self._transport is not None:
            self._transport.pause_reading()
        if self._task is None:
            self._process()

    def _process(self) -> None:
        while self._transport is not None and not self._transport.is_closing():
            if not self._ready:
                self._idle()
                return
            exchange = self._ready.popleft()
            if len(self._ready) == _MAX_PIPELINED:
                self._transport.resume_reading()
            try:
                pending = self._server.handler(exchange)
            except Exception:
                _log.exception(
                    "simulated server: handler failed for %s %s", exchange.method, exchange.path
                )
                self._reject(500, "simulated server bug: see its log")
                return
            if pending is not None:
                self._task = asyncio.get_running_loop().create_task(self._finish(pending, exchange))
                return
            self._after_reply(exchange)

    def _idle(self) -> None:
        """Every parsed request is answered: report bad framing, or invite a body."""
        if self._error is not None:
            self._reject(*self._error)
        elif self._continue:
            self._send_continue()

    def _send_continue(self) -> None:
        self._continue = False
        self.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _after_reply(self, exchange: Exchange) -> None:
        if not exchange._keep_alive and self._transport is not None:
            self._transport.close()

    async def _finish(self, pending: Coroutine[Any, Any, None], exchange: Exchange) -> None:
        try:
            await pending
        except Exception:
            _log.exception("simulated server: handler failed")
            self.abort()
            return
        finally:
            self._task = None
        self._after_reply(exchange)
        self._process()

    def _reject(self, status: int, reason: str) -> None:
        body = json.dumps({"error": reason}).encode()
        self.write(
            _head(status, {"Content-Type": "application/json"}, b"Content-Length: %d" % len(body))
            + body
        )
        if self._transport is not None:
            self._transport.close()


class HTTPServer:
    """Listens on ``host:port`` and passes each request to ``handler``, which
    answers at once (returns None) or returns a coroutine that answers later."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Start listening; returns the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), host, port, backlog=1024, reuse_address=True
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and drop every connection; pending handlers are cancelled."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        tasks = [c._task for c in self.connections if c._task is not None]
        for connection in list(self.connections):
            connection.abort()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        await server.wait_closed()
