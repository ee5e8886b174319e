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
from typing import TYPE_CHECKING

from providers.http.body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    asking_gzip,
    bounded_chunks,
)
from providers.http.transports.base import ReadingBody, StreamReply, Transport, as_transport_error

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpxTransport"]


class _HttpxStream:
    __slots__ = ("_deadline", "_max_bytes", "_resp", "_url")

    def __init__(self, resp: httpx.Response, url: str, max_bytes: int, deadline: float) -> None:
        self._resp = resp
        self._url = url
        self._max_bytes = max_bytes
        self._deadline = deadline  # httpx times each read only: the exchange's end is ours

    @property
    def status(self) -> int:
        return self._resp.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._resp.headers

    def _bounded(self) -> AsyncIterator[bytes]:
        resp = self._resp
        encoding = resp.headers.get("content-encoding")
        return bounded_chunks(resp.aiter_raw(), encoding, self._max_bytes, self._deadline)

    async def read(self) -> bytes:
        with ReadingBody(self._url):
            return b"".join([data async for data in self._bounded()])

    async def chunks(self) -> AsyncIterator[bytes]:
        with ReadingBody(self._url):
            async for data in self._bounded():
                yield data


class HttpxTransport(Transport):
    """:class:`Transport` over a user's ``httpx.AsyncClient`` (never closed here); ``post``
    is the protocol's own, the stream read whole."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    @asynccontextmanager
    async def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> AsyncGenerator[StreamReply, None]:
        deadline = asyncio.get_running_loop().time() + timeout
        request = self._client.build_request(
            "POST", url, content=body, headers=asking_gzip(headers), timeout=timeout
        )
        try:
            async with asyncio.timeout_at(deadline):
                resp = await self._client.send(request, stream=True, follow_redirects=False)
        except Exception as exc:
            raise as_transport_error(exc, url) from exc
        try:
            yield _HttpxStream(resp, url, max_bytes, deadline)
        finally:
            await resp.aclose()

    async def aclose(self) -> None:
        return None
