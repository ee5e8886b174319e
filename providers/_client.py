"""The HTTP transport the providers share, and the small interface they use it through.

Providers speak to the network through :class:`Transport` (``post`` for a whole
reply, ``stream`` for server-sent events), so the client library is one choice
made here. The default is one pooled ``aiohttp.ClientSession`` per event loop
(:func:`shared_client`): ``bench/transport.py`` measured it at about 2x the
throughput and less than half the CPU per call of httpx on the aiohttp
transport, and 15x+ httpx's default pool, at 200 concurrent calls (figures in
``bench/TRANSPORT.md``). A user may still pass their own ``httpx.AsyncClient``
or ``aiohttp.ClientSession`` as ``client=``; it is adapted, never closed by us.

No retries happen here: a failure is raised once, as :class:`TransportError`,
and the provider maps it into :mod:`orchestrator.errors`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = [
    "preload_transport",
    "POOL_SIZE",
    "RawReply",
    "StreamReply",
    "Transport",
    "TransportError",
    "close_shared_client",
    "shared_client",
    "to_transport",
]

POOL_SIZE = 1024
"""Connections the shared client keeps open at most (all hosts together)."""

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class TransportError(Exception):
    """The request did not get a complete HTTP reply; the library's error is ``__cause__``.

    ``timed_out`` tells a timeout (the provider's own ``timeout=``) from a
    connect/read/write failure. ``after_headers`` is True when the reply had
    started (status and headers received) before the failure.
    """

    def __init__(self, message: str, *, timed_out: bool, after_headers: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.after_headers = after_headers


@dataclass(frozen=True, slots=True)
class RawReply:
    """A complete HTTP reply: status, headers (case-insensitive lookup) and body bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class StreamReply(Protocol):
    """An HTTP reply whose body is read incrementally."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...


@runtime_checkable
class Transport(Protocol):
    """What a provider needs from an HTTP client: one POST, whole or streamed.

    ``timeout`` is the provider's attempt timeout in seconds: for ``post`` the
    whole exchange, for ``stream`` the connection and each wait between chunks.
    Implementations raise :class:`TransportError` and never retry.
    """

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawReply: ...

    def stream(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> AbstractAsyncContextManager[StreamReply]: ...

    async def aclose(self) -> None: ...


# -- aiohttp ------------------------------------------------------------------


class _AiohttpStream:
    __slots__ = ("_resp",)

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp

    @property
    def status(self) -> int:
        return self._resp.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._resp.headers

    async def read(self) -> bytes:
        try:
            return await self._resp.read()
        except Exception as exc:
            raise _as_transport_error(exc, after_headers=True) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._resp.content.iter_any():
                yield data
        except Exception as exc:
            raise _as_transport_error(exc, after_headers=True) from exc


def _as_transport_error(exc: Exception, *, after_headers: bool = False) -> TransportError:
    """Any library or OS failure of one exchange as a :class:`TransportError`."""
    httpx_mod = sys.modules.get("httpx")
    timed_out = isinstance(exc, TimeoutError) or (
        httpx_mod is not None and isinstance(exc, httpx_mod.TimeoutException)
    )
    if timed_out:
        return TransportError("timed out", timed_out=True, after_headers=after_headers)
    return TransportError(
        f"{type(exc).__name__}: {exc}"[:200], timed_out=False, after_headers=after_headers
    )


class AiohttpTransport:
    """:class:`Transport` over an ``aiohttp.ClientSession`` (closed by :meth:`aclose` if owned)."""

    def __init__(self, session: aiohttp.ClientSession, *, owned: bool = False) -> None:
        self._session = session
        self._owned = owned
        self._timeouts: dict[tuple[float, bool], aiohttp.ClientTimeout] = {}

    def _timeout(self, seconds: float, streaming: bool) -> aiohttp.ClientTimeout:
        key = (seconds, streaming)
        timeout = self._timeouts.get(key)
        if timeout is None:
            import aiohttp

            if streaming:
                timeout = aiohttp.ClientTimeout(sock_connect=seconds, sock_read=seconds)
            else:
                timeout = aiohttp.ClientTimeout(total=seconds)
            self._timeouts[key] = timeout
        return timeout

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawReply:
        try:
            async with self._session.post(
                url, data=body, headers=headers, timeout=self._timeout(timeout, False)
            ) as resp:
                return RawReply(resp.status, resp.headers, await resp.read())
        except Exception as exc:
            raise _as_transport_error(exc) from exc

    @asynccontextmanager
    async def stream(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> AsyncGenerator[StreamReply, None]:
        try:
            resp = await self._session.post(
                url, data=body, headers=headers, timeout=self._timeout(timeout, True)
            )
        except Exception as exc:
            raise _as_transport_error(exc) from exc
        try:
            yield _AiohttpStream(resp)
        finally:
            resp.close()

    async def aclose(self) -> None:
        if self._owned:
            await self._session.close()


# -- httpx (a user's own client) ---------------------------------------------


class _HttpxStream:
    __slots__ = ("_resp",)

    def __init__(self, resp: httpx.Response) -> None:
        self._resp = resp

    @property
    def status(self) -> int:
        return self._resp.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._resp.headers

    async def read(self) -> bytes:
        try:
            return await self._resp.aread()
        except Exception as exc:
            raise _as_transport_error(exc, after_headers=True) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._resp.aiter_bytes():
                yield data
        except Exception as exc:
            raise _as_transport_error(exc, after_headers=True) from exc


class HttpxTransport:
    """:class:`Transport` over a user's ``httpx.AsyncClient`` (never closed here)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> RawReply:
        try:
            async with asyncio.timeout(timeout):
                resp = await self._client.post(url, content=body, headers=headers, timeout=timeout)
        except Exception as exc:
            raise _as_transport_error(exc) from exc
        return RawReply(resp.status_code, resp.headers, resp.content)

    @asynccontextmanager
    async def stream(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float
    ) -> AsyncGenerator[StreamReply, None]:
        request = self._client.build_request(
            "POST", url, content=body, headers=headers, timeout=timeout
        )
        try:
            resp = await self._client.send(request, stream=True)
        except Exception as exc:
            raise _as_transport_error(exc) from exc
        try:
            yield _HttpxStream(resp)
        finally:
            await resp.aclose()

    async def aclose(self) -> None:
        return None


def to_transport(client: Any) -> Transport:
    """Adapt ``client=`` (an aiohttp session, an httpx client or a Transport) for providers."""
    aiohttp_mod = sys.modules.get("aiohttp")
    if aiohttp_mod is not None and isinstance(client, aiohttp_mod.ClientSession):
        return AiohttpTransport(client)
    httpx_mod = sys.modules.get("httpx")
    if httpx_mod is not None and isinstance(client, httpx_mod.AsyncClient):
        return HttpxTransport(client)
    if isinstance(client, Transport):
        return client
    raise TypeError(
        f"client: expected an httpx.AsyncClient, an aiohttp.ClientSession or a Transport, "
        f"got {type(client).__name__}"
    )


# -- the shared client ---------------------------------------------------------


class _Entry:
    __slots__ = ("closer", "transport")

    def __init__(self, transport: Transport, closer: AsyncGenerator[None, None]) -> None:
        self.transport = transport
        self.closer = closer


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Entry] = weakref.WeakKeyDictionary()


async def _close_at_loop_shutdown(
    loop: asyncio.AbstractEventLoop, transport: Transport
) -> AsyncGenerator[None, None]:
    # An async generator the loop tracks: asyncio.run() and asyncio.Runner call
    # loop.shutdown_asyncgens() before closing the loop, which runs this
    # finally while the loop can still await the session's close.
    try:
        yield
    finally:
        entry = _shared.get(loop)
        if entry is not None and entry.transport is transport:
            del _shared[loop]
        await transport.aclose()


def _new_shared(loop: asyncio.AbstractEventLoop) -> _Entry:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=POOL_SIZE, limit_per_host=0, ttl_dns_cache=300)
    session = aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None),
        # aiohttp looks proxies up on every request when trust_env is on: only pay for it
        # when a proxy is configured.
        trust_env=any(os.environ.get(v) for v in _PROXY_VARS),
    )
    transport = AiohttpTransport(session, owned=True)
    closer = _close_at_loop_shutdown(loop, transport)
    step = closer.asend(None)  # first step: the loop's asyncgen hooks now track it
    with suppress(StopIteration):
        step.send(None)
    return _Entry(transport, closer)


def preload_transport() -> None:
    """Import the shared transport's HTTP library now (about 0.1-0.2 s, once per process).

    Providers call this when they are built, so the first call does not spend
    its attempt deadline importing aiohttp; ``import providers`` stays cheap.
    """
    import aiohttp  # noqa: F401


def shared_client() -> Transport:
    """The process's pooled HTTP transport for the running event loop (created on first use).

    One per event loop, so ``asyncio.run`` twice and ``run_sync`` keep working;
    it is closed when its loop shuts down (or by :func:`close_shared_client`).
    Must be called from inside a running loop.
    """
    loop = asyncio.get_running_loop()
    entry = _shared.get(loop)
    if entry is None:
        entry = _shared[loop] = _new_shared(loop)
    return entry.transport


async def close_shared_client() -> None:
    """Close the running loop's shared transport now (a new one is made on next use)."""
    entry = _shared.get(asyncio.get_running_loop())
    if entry is not None:
        await entry.closer.aclose()
