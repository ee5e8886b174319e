"""How providers send HTTP: the :class:`Transport` interface (:mod:`.base`) and its
adapters, one module per library: aiohttp (:mod:`.aiohttp`, the default), a user's
httpx client (:mod:`.httpx`) and reqwest (:mod:`.reqwest`, the ``[fast]`` extra).
"""

from __future__ import annotations

import sys
from typing import Any

from providers.http.transports.aiohttp import AiohttpTransport
from providers.http.transports.base import (
    LibraryStream,
    PooledTransport,
    RawReply,
    StreamReply,
    Transport,
    TransportError,
)

__all__ = [
    "AiohttpTransport",
    "LibraryStream",
    "PooledTransport",
    "RawReply",
    "StreamReply",
    "Transport",
    "TransportError",
    "to_transport",
]


def to_transport(client: Any) -> Transport:
    """Adapt ``client=`` (an aiohttp session, an httpx client or a Transport) for providers."""
    aiohttp_mod = sys.modules.get("aiohttp")
    if aiohttp_mod is not None and isinstance(client, aiohttp_mod.ClientSession):
        return AiohttpTransport(client)
    httpx_mod = sys.modules.get("httpx")
    if httpx_mod is not None and isinstance(client, httpx_mod.AsyncClient):
        from providers.http.transports.httpx import HttpxTransport

        return HttpxTransport(client)
    if isinstance(client, Transport):
        return client
    raise TypeError(
        f"client: expected an httpx.AsyncClient, an aiohttp.ClientSession or a Transport, "
        f"got {type(client).__name__}"
    )
