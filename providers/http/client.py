"""The HTTP transport the providers share, and the small interface they use it through.

Providers speak to the network through :class:`Transport` (``post`` for a whole
reply, ``stream`` for server-sent events), so the client library is one choice
made here. The default is one pooled ``aiohttp.ClientSession`` per event loop
(:func:`shared_client`): ``bench/transport.py`` measured it at about 2x the
throughput and less than half the CPU per call of httpx on the aiohttp
transport, and 15x+ httpx's default pool, at 200 concurrent calls (figures in
``bench/TRANSPORT.md``). ``transport="reqwest"`` picks a pyreqwest client
instead (the ``[fast]`` extra; one shared per loop likewise). A user may still pass
their own ``httpx.AsyncClient`` or ``aiohttp.ClientSession`` as ``client=``; it is
adapted, never closed by us.

Lifecycle (see :class:`ClientHolder`): a provider closes only what it opened
itself: the pool it opens when entered (``async with provider`` or an entered
``FallbackAgent``), never a user's client and never the loop's shared one. The
shared client is closed when its loop shuts down: asyncio gives a library no
public hook on a loop's close, so it registers a one-step async generator with
the loop (``asyncio.run`` and ``asyncio.Runner`` close those before closing the
loop), and a loop closed without that (``run_until_complete`` then ``close``)
has its client marked closed at the next garbage collection (``gc.callbacks``),
so neither leaks the loop nor logs "Unclosed client session".

No retries happen here: a failure is raised once, as :class:`TransportError`,
and the provider maps it into :mod:`orchestrator.errors`. Redirects are never
followed (a 3xx reaches the provider, which reports a wrong ``base_url``), so
headers carrying keys never travel to another origin; transport error messages
show URLs without user info or query.
"""

from __future__ import annotations

import asyncio
import gc
import os
import weakref
from collections.abc import AsyncGenerator
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Self

from providers.http.transports import (
    AiohttpTransport,
    RawReply,
    StreamReply,
    Transport,
    TransportError,
    to_transport,
)
from providers.http.transports.httpx import HttpxTransport

if TYPE_CHECKING:
    from typing import TypeAlias

    from providers.http.transports.reqwest import ReqwestTransport

    _Pooled: TypeAlias = AiohttpTransport | ReqwestTransport

__all__ = [
    "TRANSPORTS",
    "AiohttpTransport",
    "ClientHolder",
    "HttpxTransport",
    "preload_transport",
    "POOL_SIZE",
    "RawReply",
    "StreamReply",
    "Transport",
    "TransportError",
    "close_shared_client",
    "open_transport",
    "shared_client",
    "to_transport",
]

POOL_SIZE = 1024
"""Connections the shared client keeps open at most (all hosts together)."""

TRANSPORTS = ("aiohttp", "reqwest")
"""The HTTP libraries a provider can send with (``transport=``; the first is the default)."""

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


# -- the shared client ---------------------------------------------------------


class _Entry:
    __slots__ = ("closer", "transport")

    def __init__(self, transport: _Pooled, closer: AsyncGenerator[None, None]) -> None:
        self.transport = transport
        self.closer = closer


_shared: dict[tuple[asyncio.AbstractEventLoop, str], _Entry] = {}
"""Each event loop's shared transport of each kind; an entry leaves when its loop shuts down."""


def _sweep_closed_loops(phase: str, info: dict[str, int]) -> None:
    """Before each garbage collection: forget the entries of loops closed without
    ``shutdown_asyncgens`` (``run_until_complete`` then ``close``), marking their
    sessions closed, so such loops are collected and log no "Unclosed client session"."""
    if phase != "start" or not _shared:
        return
    with suppress(Exception):
        for key in [key for key in _shared if key[0].is_closed()]:
            _shared.pop(key).transport._close_detached()


async def _close_at_loop_shutdown(
    loop_ref: weakref.ref[asyncio.AbstractEventLoop], kind: str, transport: _Pooled
) -> AsyncGenerator[None, None]:
    # An async generator the loop tracks: asyncio.run() and asyncio.Runner call
    # loop.shutdown_asyncgens() before closing the loop, which runs this
    # finally while the loop can still await the session's close. The loop is
    # held weakly: this frame must not keep a loop closed without that alive.
    try:
        yield
    finally:
        loop = loop_ref()
        entry = None if loop is None else _shared.get((loop, kind))
        if loop is not None and entry is not None and entry.transport is transport:
            del _shared[loop, kind]
        await transport.aclose()


def open_transport(kind: str = "aiohttp") -> _Pooled:
    """A new pooled transport of ``kind`` (see :data:`TRANSPORTS`) that the caller owns
    and closes: an ``aiohttp.ClientSession``, or a pyreqwest client for ``"reqwest"``.

    The shared client is one of these per loop; an entered provider opens its own.
    Must be called from inside a running loop.
    """
    env_proxy = any(os.environ.get(v) for v in _PROXY_VARS)
    if kind == "reqwest":
        from providers.http.transports.reqwest import open_reqwest

        return open_reqwest(pool_size=POOL_SIZE, env_proxy=env_proxy)
    import aiohttp

    connector = aiohttp.TCPConnector(limit=POOL_SIZE, limit_per_host=0, ttl_dns_cache=300)
    session = aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None),
        # Proxies from the environment are applied per URL by the transport (loopback
        # never proxied); aiohttp's own trust_env would proxy loopback too.
        trust_env=False,
    )
    return AiohttpTransport(session, owned=True, env_proxy=env_proxy)


def _new_shared(loop: asyncio.AbstractEventLoop, kind: str) -> _Entry:
    transport = open_transport(kind)
    closer = _close_at_loop_shutdown(weakref.ref(loop), kind, transport)
    # Run it to its yield now, synchronously (the body does not await before it): the
    # first step is what registers it with the loop's asyncgen hooks.
    step = closer.asend(None)
    with suppress(StopIteration):
        step.send(None)
    if _sweep_closed_loops not in gc.callbacks:
        gc.callbacks.append(_sweep_closed_loops)
    return _Entry(transport, closer)


def preload_transport(kind: str = "aiohttp") -> None:
    """Import the HTTP library of ``kind`` now (about 0.1-0.2 s, once per process).

    Providers call this when they are built, so the first call does not spend
    its attempt deadline importing aiohttp; ``import providers`` stays cheap.
    A missing pyreqwest is an ``ImportError`` naming the ``[fast]`` extra.
    """
    if kind == "reqwest":
        from providers.http.transports.reqwest import import_pyreqwest

        import_pyreqwest()
        return
    import aiohttp  # noqa: F401


def shared_client(kind: str = "aiohttp") -> Transport:
    """The process's pooled HTTP transport of ``kind`` for the running event loop
    (created on first use).

    One per event loop, so ``asyncio.run`` twice and ``run_sync`` keep working;
    it is closed when its loop shuts down (or by :func:`close_shared_client`).
    Must be called from inside a running loop.
    """
    loop = asyncio.get_running_loop()
    entry = _shared.get((loop, kind))
    if entry is None:
        entry = _shared[loop, kind] = _new_shared(loop, kind)
    return entry.transport


class ClientHolder:
    """The HTTP client a provider sends with, and its lifecycle (``async with``, ``aclose``).

    Which transport a call uses, and who closes it:

    - ``client=`` given (an ``httpx.AsyncClient``, an ``aiohttp.ClientSession`` or a
      :class:`Transport`): that one, always; its owner closes it, never the provider.
    - entered (``async with provider:``, or through an entered ``FallbackAgent``):
      a pooled transport the provider opens on the running loop and closes at
      ``aclose()`` (entered twice, by two agents, it closes at the last exit).
    - otherwise: the event loop's :func:`shared_client`, which belongs to the loop
      (every provider on it shares it), so no provider closes it: the loop's
      shutdown does, or :func:`close_shared_client`.
    """

    _transport: Transport | None
    _user_client: bool
    _entered: int
    _kind: str

    def _use_client(self, client: Any, transport: str | None = None) -> None:
        """Set up ``client=`` or ``transport=`` at construction (a client adapted now, or
        the transport's HTTP library preloaded)."""
        if transport is not None and transport not in TRANSPORTS:
            raise ValueError(
                f"{type(self).__name__}.transport={transport!r}: expected one of "
                f"{', '.join(map(repr, TRANSPORTS))} (None: {TRANSPORTS[0]!r})"
            )
        if transport is not None and client is not None:
            raise ValueError(
                f"{type(self).__name__}: give client= or transport={transport!r}, not both "
                "(a client given is used as it is)"
            )
        self._kind = transport or TRANSPORTS[0]
        self._user_client = client is not None
        self._transport = None if client is None else to_transport(client)
        self._entered = 0
        if client is None:
            preload_transport(self._kind)

    async def __aenter__(self) -> Self:
        if self._entered == 0 and not self._user_client:
            self._transport = open_transport(self._kind)
        self._entered += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what entering opened, at the last exit; nothing when never entered."""
        if self._entered == 0:
            return
        self._entered -= 1
        if self._entered == 0 and not self._user_client:
            opened, self._transport = self._transport, None
            if opened is not None:
                await opened.aclose()


async def close_shared_client(kind: str = "aiohttp") -> None:
    """Close the running loop's shared transport of ``kind`` now (a new one is made on next
    use)."""
    entry = _shared.get((asyncio.get_running_loop(), kind))
    if entry is not None:
        await entry.closer.aclose()
