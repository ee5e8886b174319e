"""A minimal HTTP/1.1 server on asyncio, just enough for the simulated providers.

Why not aiohttp.web: the simulator must stay far below the cost of the clients
it serves in a benchmark (200 concurrent calls on two cores), and aiohttp's
server spent about twice the CPU per request (127 vs 60 us at 200
in flight, measured with bench/simulator_alone.py). Supported: keep-alive,
Content-Length and chunked request bodies, one request at a time per connection
(no pipelining concurrency), chunked responses for streams. Replies that need
no waiting are written from ``data_received`` without creating a task.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote

__all__ = ["Exchange", "Handler", "HTTPServer"]

_log = logging.getLogger("providers.simulated")
_MAX_HEAD = 64 * 1024
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

    __slots__ = ("_conn", "body", "headers", "method", "path", "query")

    def __init__(
        self,
        conn: _Connection,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        self._conn = conn
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


class _Connection(asyncio.Protocol):
    def __init__(self, server: HTTPServer) -> None:
        self._server = server
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._close_after = False

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

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._task is None:
            self._process()

    def _process(self) -> None:
        while self._transport is not None and not self._transport.is_closing():
            exchange = self._parse()
            if exchange is None:
                return
            try:
                pending = self._server.handler(exchange)
            except Exception:
                _log.exception(
                    "simulated server: handler failed for %s %s", exchange.method, exchange.path
                )
                self._reject(500, "simulated server bug: see its log")
                return
            if pending is not None:
                self._task = asyncio.get_running_loop().create_task(self._finish(pending))
                return
            self._after_reply()

    def _after_reply(self) -> None:
        if self._close_after and self._transport is not None:
            self._transport.close()

    async def _finish(self, pending: Coroutine[Any, Any, None]) -> None:
        try:
            await pending
        except Exception:
            _log.exception("simulated server: handler failed")
            self.abort()
            return
        finally:
            self._task = None
        self._after_reply()
        if self._buffer:
            self._process()

    def _parse(self) -> Exchange | None:
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > _MAX_HEAD:
                self._reject(431, "request head too large")
            return None
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            self._reject(400, "malformed request line")
            return None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            decoded = _dechunk(buffer, start)
            if decoded is None:
                return None
            body, consumed = decoded
        else:
            length = int(headers.get("content-length") or 0)
            if len(buffer) < start + length:
                return None
            body, consumed = bytes(buffer[start : start + length]), start + length
        del buffer[:consumed]
        connection = headers.get("connection", "").lower()
        self._close_after = connection == "close" or (
            version == "HTTP/1.0" and connection != "keep-alive"
        )
        path, _, raw_query = target.partition("?")
        if "%" in path:
            path = unquote(path)
        query = dict(parse_qsl(raw_query)) if raw_query else {}
        return Exchange(self, method, path, query, headers, body)

    def _reject(self, status: int, reason: str) -> None:
        body = json.dumps({"error": reason}).encode()
        self.write(
            _head(status, {"Content-Type": "application/json"}, b"Content-Length: %d" % len(body))
            + body
        )
        if self._transport is not None:
            self._transport.close()


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """A chunked body from ``buffer[start:]`` and the bytes consumed, or None if incomplete."""
    body = bytearray()
    pos = start
    while True:
        eol = buffer.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buffer[pos:eol]).split(b";", 1)[0], 16)
        pos = eol + 2
        if size == 0:
            trailer_end = buffer.find(b"\r\n", pos)
            if trailer_end < 0:
                return None
            return bytes(body), trailer_end + 2
        if len(buffer) < pos + size + 2:
            return None
        body += buffer[pos : pos + size]
        pos += size + 2


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
