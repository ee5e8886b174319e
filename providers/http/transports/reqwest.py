"""The :class:`~providers.http.transports.Transport` over pyreqwest (Rust's reqwest), the
optional ``[fast]`` extra, chosen with ``transport="reqwest"`` on any HTTP provider.

It behaves as the aiohttp transport does: no redirects followed, reqwest's own
decompression off (:mod:`providers.http.body` decodes, counts and caps the raw
bytes), ``timeout`` bounds the whole exchange, streams included (reqwest's
per-request total timeout, kept in Rust), TLS certificates verified, proxies from
the environment decided per URL by :class:`~providers.http.proxy.ProxyRoutes`
(loopback never proxied, credentials never sent through a plain-http proxy hop),
and every failure raised as a ``TransportError``.

One difference is pyreqwest's, not ours: cancelling the awaiting task returns at
once, but the exchange already handed to Rust runs on (its connection held) until
it ends or reaches its ``timeout``, which therefore bounds what a cancelled call
keeps open. pyreqwest is imported only when this transport is first used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from providers.http.body import BodyTooLarge, asking_gzip, read_bounded
from providers.http.proxy import ProxyRoutes
from providers.http.transports.base import LibraryStream, PooledTransport, RawReply

if TYPE_CHECKING:
    from pyreqwest.client import Client
    from pyreqwest.http import Url
    from pyreqwest.response import Response

__all__ = ["MISSING_EXTRA", "ReqwestTransport", "import_pyreqwest", "open_reqwest"]

MISSING_EXTRA = (
    "transport='reqwest' needs pyreqwest, which is not installed: "
    "pip install 'failover-orchestrator[fast]'"
)


def import_pyreqwest() -> None:
    """Import pyreqwest now; an ``ImportError`` naming the ``[fast]`` extra when it is missing."""
    try:
        import pyreqwest.client  # noqa: F401
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc


async def _raw(resp: Response) -> AsyncIterator[bytes]:
    """The body's bytes as received (content-encoding not undone)."""
    reader = resp.body_reader
    while (chunk := await reader.read_chunk()) is not None:
        yield chunk.to_bytes()


async def _whole(resp: Response, max_bytes: int) -> bytes:
    """The whole body of ``resp``, capped (one read when its length is declared and plain)."""
    encoding = resp.get_header("content-encoding")
    length = resp.get_header("content-length")
    if encoding is None and length is not None and length.isdigit():
        # hyper reads no more than a declared length: the cap is checked before reading.
        if int(length) > max_bytes:
            raise BodyTooLarge(max_bytes)
        return (await resp.bytes()).to_bytes()
    return await read_bounded(_raw(resp), encoding, max_bytes)


class _ReqwestStream(LibraryStream):
    __slots__ = ()

    async def _whole(self) -> bytes:
        return await _whole(self._resp, self._max_bytes)

    def _raw(self) -> AsyncIterator[bytes]:
        return _raw(self._resp)


class ReqwestTransport(PooledTransport):
    """:class:`~providers.http.transports.Transport` over a ``pyreqwest.client.Client``
    (closed by :meth:`aclose` if owned); ``routes`` when built with a proxy variable set."""

    def __init__(
        self, client: Client, *, owned: bool = False, routes: ProxyRoutes | None = None
    ) -> None:
        self._client = client
        self._owned = owned
        self._routes = routes
        self._timeouts: dict[float, timedelta] = {}
        self._urls: dict[str, Url] = {}

    async def _whole_reply(self, resp: Response, url: str, max_bytes: int) -> RawReply:
        # Still a streamed request (a consumed one reads a body of any size before its
        # length can be checked), but no stream object over it.
        return RawReply(resp.status, resp.headers, await _whole(resp, max_bytes))

    def _open(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, *, whole: bool
    ) -> AbstractAsyncContextManager[Response]:
        if self._routes is not None:
            self._routes.checked(url, headers)  # refuses credentials on a plain-http hop
        limit = self._timeouts.get(timeout)
        if limit is None:
            if len(self._timeouts) > 64:
                self._timeouts.clear()
            limit = self._timeouts[timeout] = timedelta(seconds=timeout)
        builder = (
            self._client.post(self._parsed(url)).headers(asking_gzip(headers)).body_bytes(body)
        )
        if not whole:
            # Entering a streamed request reads this many body bytes first (64 KiB by
            # default): a stream's first events must reach the caller as they arrive.
            builder = builder.streamed_read_buffer_limit(0)
        return builder.timeout(limit).build_streamed()

    def _parsed(self, url: str) -> Url:
        """``url`` parsed, once per URL: a provider sends to the same few, and parsing
        one was about a third of building the request."""
        parsed = self._urls.get(url)
        if parsed is None:
            from pyreqwest.http import Url

            if len(self._urls) > 64:
                self._urls.clear()
            parsed = self._urls[url] = Url(url)
        return parsed

    def _reply(self, resp: Any, url: str, max_bytes: int) -> LibraryStream:
        return _ReqwestStream(resp, url, max_bytes)

    def _in_body(self, exc: Exception) -> bool:
        # Entering a stream reads its first bytes, so a reply cut early fails there,
        # after its status and headers arrived.
        from pyreqwest.exceptions import BodyDecodeError, ReadError

        return isinstance(exc, ReadError | BodyDecodeError)

    def _close_detached(self) -> None:
        """Nothing to do once the loop is closed: the Rust client closes when collected."""

    async def aclose(self) -> None:
        if self._owned:
            await self._client.close()


def _proxy_for(routes: ProxyRoutes) -> Callable[[Url], str | None]:
    """reqwest's per-URL proxy choice, read from ``routes`` (login kept in the proxy URL)."""

    def choose(url: Url) -> str | None:
        proxy = routes.route(str(url)).proxy
        return None if proxy is None else str(proxy)

    return choose


def open_reqwest(*, pool_size: int, env_proxy: bool) -> ReqwestTransport:
    """A new pooled reqwest transport that the caller owns and closes.

    ``env_proxy`` routes each URL by the environment's proxy variables (read per URL,
    as the aiohttp transport does); otherwise reqwest's own reading of them is off.
    """
    import_pyreqwest()
    from pyreqwest.client import ClientBuilder
    from pyreqwest.proxy import ProxyBuilder

    builder = (
        ClientBuilder()
        .no_proxy()
        .follow_redirects(False)
        .referer(False)
        .gzip(False)
        .deflate(False)
        .brotli(False)
        .zstd(False)
        .max_connections(pool_size)
    )
    routes = ProxyRoutes() if env_proxy else None
    if routes is not None:
        builder = builder.proxy(ProxyBuilder.custom(_proxy_for(routes)))
    return ReqwestTransport(builder.build(), owned=True, routes=routes)
