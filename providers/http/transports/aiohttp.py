"""The default :class:`~.base.Transport`: a pooled ``aiohttp.ClientSession``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from providers.http.body import aiohttp_body, asking_gzip
from providers.http.proxy import ProxyRoutes
from providers.http.transports.base import LibraryStream, PooledTransport, RawReply

if TYPE_CHECKING:
    import aiohttp

__all__ = ["AiohttpTransport"]


class _AiohttpStream(LibraryStream):
    __slots__ = ()

    async def _whole(self) -> bytes:
        return await aiohttp_body(self._resp, self._max_bytes)

    def _raw(self) -> AsyncIterator[bytes]:
        raw: AsyncIterator[bytes] = self._resp.content.iter_any()
        return raw


class AiohttpTransport(PooledTransport):
    """:class:`Transport` over an ``aiohttp.ClientSession`` (closed by :meth:`aclose` if owned).

    ``env_proxy=True`` (the shared client, when a proxy variable is set) routes
    each URL through the environment's proxy, decided once per URL: loopback
    targets are never proxied, and a request carrying credentials is refused
    rather than sent in clear text through a plain-http proxy to an http target.
    """

    def __init__(
        self, session: aiohttp.ClientSession, *, owned: bool = False, env_proxy: bool = False
    ) -> None:
        self._session = session
        self._owned = owned
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        self._routes = ProxyRoutes() if env_proxy else None

    def _close_detached(self) -> None:
        """Close the session of an event loop already closed (no await possible; best effort).

        With the loop closed, aiohttp only marks the session and connector closed (so
        they do not warn when collected); their sockets close when collected.
        """
        coro = self._session.close()
        try:
            coro.send(None)
        except StopIteration:
            return
        except Exception:
            return
        coro.close()

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        # ``total`` bounds the whole exchange, body included: a stream that drips a
        # keep-alive forever ends at ``seconds`` like a whole reply does.
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            import aiohttp

            timeout = self._timeouts[seconds] = aiohttp.ClientTimeout(total=seconds)
        return timeout

    def _open(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, *, whole: bool
    ) -> Any:
        """The POST as aiohttp sends it for ``post`` and ``stream`` alike: no redirects, no
        decompression (:mod:`providers.http.body` bounds it)."""
        proxy = None if self._routes is None else self._routes.checked(url, headers).proxy
        return self._session.post(
            url,
            data=body,
            headers=asking_gzip(headers),
            timeout=self._timeout(timeout),
            allow_redirects=False,
            proxy=proxy,
            auto_decompress=False,
        )

    def _reply(self, resp: Any, url: str, max_bytes: int) -> LibraryStream:
        return _AiohttpStream(resp, url, max_bytes)

    async def _whole_reply(self, resp: Any, url: str, max_bytes: int) -> RawReply:
        return RawReply(resp.status, resp.headers, await aiohttp_body(resp, max_bytes))

    async def _end(self, request: Any, resp: Any) -> None:
        resp.close()  # not released to the pool: a stream may stop before its end

    async def aclose(self) -> None:
        if self._owned:
            await self._session.close()
