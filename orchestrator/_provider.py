"""The provider interface every child of a FallbackAgent implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from orchestrator._request import Request, Response

__all__ = ["Provider", "StreamingProvider"]


@runtime_checkable
class Provider(Protocol):
    """Anything with a ``name`` and ``async complete(request) -> Response``.

    ``complete`` must translate every failure into a class of
    :mod:`orchestrator.errors` (plain exceptions are treated as transient) and
    must not retry on its own: retries happen in the engine only.
    """

    name: str

    async def complete(self, request: Request) -> Response: ...


@runtime_checkable
class StreamingProvider(Provider, Protocol):
    """A provider that can stream: ``stream(request)`` yields text chunks, then one Response.

    The final :class:`Response` carries the full text and usage. A stream that
    ends without its terminator must raise ``StreamInterrupted``.
    """

    def stream(self, request: Request) -> AsyncIterator[str | Response]: ...
