"""The :class:`~providers.http.transports.Transport` over a user's own ``httpx.AsyncClient``.

Given as ``client=``, the client is used as it is (its proxies, its pool, its
TLS settings) and never closed here. Bodies are bounded as with the default
transport: httpx's decompression is bypassed (``aiter_raw``) and
:mod:`providers.http.body` decodes and caps the bytes; ``timeout`` bounds the
whole exchange, as httpx's own timeouts bound each read only.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from providers.http.body import asking_gzip, bounded_chunks
from providers.http.transports.base import LibraryStream, PooledTransport

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpxTransport"]


class _HttpxStream(LibraryStream):
    __slots__ = ()

    @property
    def status(self) -> int:
        return int(self._resp.status_code)

    async def _whole(self) -> bytes:
        encoding = self.headers.get("content-encoding")
        chunks = bounded_chunks(self._raw(), encoding, self._max_bytes, self._deadline)
        return b"".join([data async for data in chunks])

    def _raw(self) -> AsyncIterator[bytes]:
        raw: AsyncIterator[bytes] = self._resp.aiter_raw()
        return raw


class HttpxTransport(PooledTransport):
    """:class:`Transport` over a user's ``httpx.AsyncClient`` (never closed here)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    @asynccontextmanager
    async def _open(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, *, whole: bool
    ) -> AsyncGenerator[tuple[httpx.Response, float], None]:
        """The POST, streamed for ``post`` and ``stream`` alike (no redirects, raw bytes),
        with the exchange's deadline: httpx times each read only, the whole is ours."""
        deadline = asyncio.get_running_loop().time() + timeout
        request = self._client.build_request(
            "POST", url, content=body, headers=asking_gzip(headers), timeout=timeout
        )
        async with asyncio.timeout_at(deadline):
            resp = await self._client.send(request, stream=True, follow_redirects=False)
        try:
            yield resp, deadline
        finally:
            await resp.aclose()

    def _reply(self, resp: Any, url: str, max_bytes: int) -> LibraryStream:
        response, deadline = resp
        return _HttpxStream(response, url, max_bytes, deadline)

    async def aclose(self) -> None:
        return None
