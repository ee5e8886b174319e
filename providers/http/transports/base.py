"""The :class:`Transport` interface and what the transports share.

A transport does one POST, whole or streamed, and raises :class:`TransportError`
on any failure below HTTP; it never retries and never follows a redirect (a
3xx is returned, so headers carrying keys never reach another origin). Error
messages show URLs without user info or query. :mod:`providers.http.client`
owns the shared, pooled instances: aiohttp's (:mod:`.aiohttp`) and reqwest's
(:mod:`.reqwest`), both a :class:`PooledTransport`, as is the adapter of a user's
httpx client (:mod:`.httpx`).

Bodies are bounded the same way in every adapter: the libraries' own
decompression is off, and :mod:`providers.http.body` decodes, counts and caps the
raw bytes (``BodyTooLarge``, raised as is), and ``timeout`` bounds the whole
exchange, streams included.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from orchestrator.secrets import redact_urls, scrub, url_secrets
from providers.http.body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    BodyTooLarge,
    bounded_chunks,
)
from providers.http.proxy import ProxyRefused

if TYPE_CHECKING:
    pass


__all__ = [
    "LibraryStream",
    "PooledTransport",
    "RawReply",
    "ReadingBody",
    "StreamReply",
    "Transport",
    "TransportError",
    "as_transport_error",
]


class TransportError(Exception):
    """The request did not get a complete HTTP reply; the library's error is ``__cause__``.

    ``timed_out`` tells a timeout (the provider's own ``timeout=``) from a
    connect/read/write failure. ``after_headers`` is True when the reply had
    started (status and headers received) before the failure. ``refused`` is
    True when the request was not sent because it would have leaked
    credentials (a plain-http proxy): retrying cannot help.
    """

    def __init__(
        self,
        message: str,
        *,
        timed_out: bool,
        after_headers: bool = False,
        refused: bool = False,
    ) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.after_headers = after_headers
        self.refused = refused


@dataclass(frozen=True, slots=True)
class RawReply:
    """A complete HTTP reply: status, headers (case-insensitive lookup) and body bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class StreamReply(Protocol):
    """An HTTP reply whose body is read incrementally: decoded, capped at the
    stream's ``max_bytes`` (``BodyTooLarge``) and within its deadline."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...


@runtime_checkable
class Transport(Protocol):
    """What a provider needs from an HTTP client: one POST, whole or streamed.

    ``timeout`` is the provider's attempt timeout in seconds: the whole exchange,
    from connecting to the body's last byte, for ``post`` and ``stream`` alike.
    ``max_bytes`` caps the reply's body after decompression (``BodyTooLarge``).
    Implementations raise :class:`TransportError` and never retry.
    """

    async def post(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> RawReply:
        """The whole reply. By default ``stream`` read to its end: a transport that
        subclasses this protocol inherits it, or overrides it with a faster path."""
        async with self.stream(url, headers, body, timeout, max_bytes) as reply:
            return RawReply(reply.status, reply.headers, await reply.read())

    def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> AbstractAsyncContextManager[StreamReply]: ...

    async def aclose(self) -> None: ...


class PooledTransport:
    """``post`` and ``stream`` as the library transports (aiohttp, reqwest, httpx) share them: the
    library's request (``_open``, entered), its response read through ``_reply``, and any
    failure raised as a :class:`TransportError` (``BodyTooLarge`` as is)."""

    __slots__ = ()

    def _open(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, *, whole: bool
    ) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    def _reply(self, resp: Any, url: str, max_bytes: int) -> LibraryStream:
        raise NotImplementedError

    def _in_body(self, exc: Exception) -> bool:
        """Whether ``exc``, raised while entering a request, came from reading its body."""
        return False

    async def _end(self, request: Any, resp: Any) -> None:
        await request.__aexit__(None, None, None)

    async def _whole_reply(self, resp: Any, url: str, max_bytes: int) -> RawReply:
        """The whole reply of the entered ``resp``, its body capped: read through
        :meth:`_reply`, unless the library's response can be read so directly."""
        reply = self._reply(resp, url, max_bytes)
        return RawReply(reply.status, reply.headers, await reply._whole())

    async def post(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> RawReply:
        try:
            async with self._open(url, headers, body, timeout, whole=True) as resp:
                return await self._whole_reply(resp, url, max_bytes)
        except BodyTooLarge:
            raise
        except Exception as exc:
            raise as_transport_error(exc, url) from exc

    def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> AbstractAsyncContextManager[StreamReply]:
        return _Streamed(self, url, headers, body, timeout, max_bytes)


class _Streamed:
    """:meth:`PooledTransport.stream`'s context: the library's request entered (a failure
    raised as a ``TransportError``), its reply read through ``_reply``, and ``_end``
    at the exit. A class, not a generator-based context manager: a stream pays no
    async generator for it."""

    __slots__ = ("_args", "_request", "_resp", "_transport")

    def __init__(
        self,
        transport: PooledTransport,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float,
        max_bytes: int,
    ) -> None:
        self._transport = transport
        self._args = (url, headers, body, timeout, max_bytes)
        self._request: Any = None
        self._resp: Any = None

    async def __aenter__(self) -> StreamReply:
        transport = self._transport
        url, headers, body, timeout, max_bytes = self._args
        try:
            request = transport._open(url, headers, body, timeout, whole=False)
            resp = await request.__aenter__()
        except Exception as exc:
            raise as_transport_error(exc, url, after_headers=transport._in_body(exc)) from exc
        self._request, self._resp = request, resp
        try:
            return transport._reply(resp, url, max_bytes)
        except BaseException:
            await transport._end(request, resp)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        await self._transport._end(self._request, self._resp)


# -- aiohttp ------------------------------------------------------------------


class LibraryStream:
    """A :class:`StreamReply` over one library's response ``resp``: a subclass says how to
    read it whole (``_whole``, capped) and as received (``_raw``); here both are bounded
    and their failures raised as ``TransportError`` (:class:`ReadingBody`). ``deadline``
    (``loop.time()``) ends the exchange when the library bounds each read only."""

    __slots__ = ("_deadline", "_max_bytes", "_resp", "_url")

    def __init__(self, resp: Any, url: str, max_bytes: int, deadline: float | None = None) -> None:
        self._resp = resp
        self._url = url
        self._max_bytes = max_bytes
        self._deadline = deadline

    @property
    def status(self) -> int:
        return int(self._resp.status)

    @property
    def headers(self) -> Mapping[str, str]:
        headers: Mapping[str, str] = self._resp.headers
        return headers

    async def _whole(self) -> bytes:
        raise NotImplementedError

    def _raw(self) -> AsyncIterator[bytes]:
        raise NotImplementedError

    async def read(self) -> bytes:
        with ReadingBody(self._url):
            return await self._whole()

    def chunks(self) -> AsyncGenerator[bytes, None]:
        encoding = self.headers.get("content-encoding")
        # Without a deadline the library's own total timeout (set for streams too) ends it.
        return bounded_chunks(
            self._raw(),
            encoding,
            self._max_bytes,
            self._deadline,
            failures=ReadingBody(self._url),
        )


class ReadingBody:
    """``with ReadingBody(url):`` around reading a reply whose headers arrived: any
    failure but ``BodyTooLarge`` (raised as is) becomes a ``TransportError`` with
    ``after_headers=True``."""

    __slots__ = ("_url",)

    def __init__(self, url: str) -> None:
        self._url = url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, Exception) and not isinstance(exc, BodyTooLarge):
            raise as_transport_error(exc, self._url, after_headers=True) from exc


def as_transport_error(exc: Exception, url: str, *, after_headers: bool = False) -> TransportError:
    """Any library or OS failure of one exchange as a :class:`TransportError`.

    The message shows URLs without user info or query, and masks the
    credentials ``url`` carries (libraries quote the request URL).
    """
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, ProxyRefused):
        return TransportError(str(exc), timed_out=False, refused=True)
    httpx_mod = sys.modules.get("httpx")
    timed_out = isinstance(exc, TimeoutError) or (
        httpx_mod is not None and isinstance(exc, httpx_mod.TimeoutException)
    )
    if timed_out:
        return TransportError("timed out", timed_out=True, after_headers=after_headers)
    text = scrub(redact_urls(f"{type(exc).__name__}: {_described(exc)}"), url_secrets(url))
    return TransportError(text[:200], timed_out=False, after_headers=after_headers)


def _described(exc: Exception) -> str:
    """What ``exc`` says; for pyreqwest, its message and innermost causes (what went wrong
    below: "tcp connect error; Connection refused"), not its ``details`` dict."""
    details = getattr(exc, "details", None)
    if not isinstance(details, dict) or not isinstance(getattr(exc, "message", None), str):
        return str(exc)
    causes = [c.get("message", "") for c in details.get("causes") or [] if isinstance(c, dict)]
    return "; ".join([str(exc.message), *causes[-2:]])  # type: ignore[attr-defined]
