"""Reading a reply body within bounds: a size cap, inflation in slices, a deadline.

Both transports hand the body's raw bytes (content-encoding not yet undone) to
:func:`bounded_chunks`, which is the one place that decodes gzip/deflate, counts
the bytes, and stops past ``max_bytes`` with :class:`BodyTooLarge`. A compressed
body is inflated at most :data:`SLICE` bytes at a time with a turn of the event
loop between slices, so a small "gzip bomb" on the wire neither allocates its
whole inflated size nor holds the loop (an attempt timeout still fires on time).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from orchestrator.errors import ResponseTooLarge

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "SLICE",
    "BodyTooLarge",
    "BodyUndecodable",
    "aiohttp_body",
    "asking_gzip",
    "bounded_chunks",
    "check_max_bytes",
    "read_bounded",
]

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The most bytes a reply may have by default (32 MiB), counted after decompression."""

ACCEPT_ENCODING = "gzip, deflate"
"""The content-codings asked for: the ones :func:`bounded_chunks` can inflate in slices."""

SLICE = 256 * 1024
"""The most bytes inflated in one step before the event loop gets a turn."""


class BodyTooLarge(Exception):
    """A reply, or one line or event of a stream, passed its size cap; reading stopped there.

    Not a transport failure: transports let it through as is, and providers raise
    :meth:`taxonomy` (``ResponseTooLarge``) from it.
    """

    def __init__(self, limit: int, message: str | None = None) -> None:
        super().__init__(
            message
            or f"the reply passed {limit} bytes (counted after decompression); "
            "reading stopped there"
        )
        self.limit = limit

    def taxonomy(self, provider: str) -> ResponseTooLarge:
        """The ``orchestrator.errors`` class for this failure of ``provider``."""
        return ResponseTooLarge(
            f"{self} (max_response_bytes={self.limit}; raise it if such replies are expected)",
            provider=provider,
        )


class BodyUndecodable(ValueError):
    """The body's content-encoding is not one asked for, or the compressed data is corrupt."""


def check_max_bytes(value: int, *, field: str) -> int:
    """``value`` when it is an int >= 1 (a byte count), else ``ValueError`` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{field}={value!r} must be a whole number of bytes >= 1 (e.g. 33554432 for 32 MiB)"
        )
    return value


class _Inflater:
    """Undoes gzip or deflate a slice at a time (concatenated gzip members included)."""

    __slots__ = ("_obj", "_wbits")

    def __init__(self, encoding: str) -> None:
        # 47 reads a gzip or a zlib header; a raw deflate stream (some servers send
        # that for "deflate") is recognised by its first byte, as browsers do.
        self._wbits = 47
        self._obj: zlib._Decompress | None = None if encoding == "deflate" else self._new()

    def _new(self) -> zlib._Decompress:
        return zlib.decompressobj(self._wbits)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The inflated bytes of ``data``, in slices of at most :data:`SLICE` bytes."""
        obj = self._obj
        if obj is None:
            self._wbits = 15 if data and data[0] & 0x0F == 8 else -15
            obj = self._obj = self._new()
        while True:
            out = obj.decompress(data, SLICE)
            if out:
                yield out
            data = obj.unconsumed_tail
            if obj.eof and obj.unused_data:  # another gzip member follows
                data = obj.unused_data
                obj = self._obj = self._new()
            elif len(out) < SLICE and not data:
                return


def _inflater(encoding: str | None) -> _Inflater | None:
    coding = (encoding or "").strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip", "deflate"):
        return _Inflater("deflate" if coding == "deflate" else "gzip")
    raise BodyUndecodable(
        f"the reply is encoded as {coding[:40]!r}, which was not asked for "
        f"(Accept-Encoding: {ACCEPT_ENCODING})"
    )


async def bounded_chunks(
    raw: AsyncIterator[bytes],
    encoding: str | None,
    max_bytes: int,
    deadline: float | None = None,
    *,
    failures: AbstractContextManager[object] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The decoded body of ``raw`` (bytes as received, ``encoding`` its Content-Encoding).

    Raises :class:`BodyTooLarge` as soon as the raw or the decoded bytes pass
    ``max_bytes``, and ``TimeoutError`` when a read would end past ``deadline``
    (``loop.time()`` seconds; None when the client library bounds the exchange).
    A corrupt or unrequested encoding raises :class:`BodyUndecodable`. The reading
    runs inside ``failures`` when given (a transport's mapping of what goes wrong
    there to its own error, so the body needs no generator of its own around this one).
    """
    with failures or nullcontext():
        inflater = _inflater(encoding)
        received = decoded = 0
        reader = aiter(raw)
        try:
            while True:
                if deadline is None:
                    data = await anext(reader, None)
                else:
                    async with asyncio.timeout_at(deadline):
                        data = await anext(reader, None)
                if data is None:
                    return
                if not data:
                    continue
                received += len(data)
                if received > max_bytes:
                    raise BodyTooLarge(max_bytes)
                if inflater is None:
                    yield data
                    continue
                slices = inflater.feed(data)
                first = True
                while (piece := _next_slice(slices, encoding)) is not None:
                    if not first:
                        await asyncio.sleep(0)  # a bomb inflates slice by slice: let the loop run
                    first = False
                    decoded += len(piece)
                    if decoded > max_bytes:
                        raise BodyTooLarge(max_bytes)
                    yield piece
        finally:  # left open, the reader would be closed later by a task of the loop's own
            aclose = getattr(reader, "aclose", None)
            if aclose is not None:
                await aclose()


def _next_slice(slices: Iterator[bytes], encoding: str | None) -> bytes | None:
    try:
        return next(slices, None)
    except zlib.error as exc:
        raise BodyUndecodable(f"the reply's {encoding} body is corrupt ({exc})") from exc


async def read_bounded(
    raw: AsyncIterator[bytes],
    encoding: str | None,
    max_bytes: int,
    deadline: float | None = None,
) -> bytes:
    """The whole decoded body of ``raw`` (see :func:`bounded_chunks`)."""
    parts = [part async for part in bounded_chunks(raw, encoding, max_bytes, deadline)]
    return parts[0] if len(parts) == 1 else b"".join(parts)


def asking_gzip(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` asking for the encodings :mod:`providers.http.body` can inflate in slices
    (providers put it in their cached headers already, so usually no copy)."""
    if headers.get("accept-encoding") == ACCEPT_ENCODING:
        return headers
    out = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
    out["accept-encoding"] = ACCEPT_ENCODING
    return out


async def aiohttp_body(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The whole body of ``resp`` (requested with ``auto_decompress=False``), capped."""
    encoding = resp.headers.get("Content-Encoding")
    length = resp.content_length
    if encoding is None and length is not None:
        # The common case: a declared, uncompressed length is all the parser reads.
        if length > max_bytes:
            raise BodyTooLarge(max_bytes)
        return await resp.read()
    return await read_bounded(resp.content.iter_any(), encoding, max_bytes)
