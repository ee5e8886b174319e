"""The seam between the gateway and an HTTP server: one request in, one reply out.

The gateway's logic (:mod:`providers.serve.gateway`) sees a request only as an
:class:`Exchange` and answers with a :class:`Reply` (or a stream opened on the
exchange), so the same handlers run on aiohttp (:mod:`providers.serve.app`) and
on granian (:mod:`providers.serve.rsgi`). An adapter wraps its server's request
in an ``Exchange`` and writes the ``Reply`` out; nothing else of a server is
known to the gateway.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from providers.serve.call import encoded

__all__ = ["JSON", "Exchange", "Reply", "Sink", "json_reply"]

JSON = "application/json"


@dataclass(slots=True)
class Reply:
    """A whole reply: status, body, headers (``Content-Type`` among them); ``close`` asks
    the server to close the connection after it (the rest of the body is not worth reading)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False


def json_reply(
    status: int, body: Any, headers: dict[str, str] | None = None, plain: bool = False
) -> Reply:
    """``body`` as a JSON reply (``plain``: see :func:`~providers.serve.call.encoded`)."""
    return Reply(status, encoded(body, plain), {"Content-Type": JSON, **(headers or {})})


class Sink(Protocol):
    """An open streamed reply (status 200 already sent)."""

    async def write(self, data: bytes) -> None:
        """Send ``data`` now; ``ConnectionResetError`` when the client has left."""

    async def end(self) -> None:
        """The reply is complete."""


class Exchange(Protocol):
    """One request as the gateway reads it, and the stream it may answer with."""

    method: str
    path: str  # without the query string
    scheme: str

    def header(self, name: str) -> str | None:
        """A request header's value (``name`` in lower case), ``None`` when absent."""

    def local(self) -> tuple[str, int] | None:
        """The address and port the client connected to, when the server tells."""

    def body(self) -> AsyncIterable[bytes]:
        """The raw (still encoded) body, chunk by chunk as it arrives (a chunk may be empty;
        the reader may stop at the declared length without reading the end)."""

    async def stream(self, headers: dict[str, str]) -> Sink:
        """Send status 200 with ``headers`` and keep the reply open for :meth:`Sink.write`."""
