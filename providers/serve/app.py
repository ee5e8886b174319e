"""The gateway as an aiohttp application: every path goes to the server-free gateway.

``build_app(models, keys, settings)`` returns the :class:`aiohttp.web.Application`;
:mod:`providers.serve.server` runs it (``failover serve --server aiohttp``). This
module only adapts aiohttp's request and response to the gateway's
:class:`~providers.serve.exchange.Exchange` and :class:`~providers.serve.exchange.Reply`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable

from aiohttp import web

from providers.serve.auth import GatewayKeys
from providers.serve.exchange import Reply, Sink
from providers.serve.gateway import Gateway
from providers.serve.models import Models
from providers.serve.settings import GatewaySettings

__all__ = ["build_app"]

_GATEWAY: web.AppKey[Gateway] = web.AppKey("gateway", Gateway)


class _Sink:
    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response

    async def write(self, data: bytes) -> None:
        await self.response.write(data)

    async def end(self) -> None:
        await self.response.write_eof()


class _Exchange:
    """An aiohttp request as the gateway reads it."""

    __slots__ = ("method", "path", "request", "scheme", "sink")

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.method, self.path, self.scheme = request.method, request.path, request.scheme
        self.sink: _Sink | None = None

    def header(self, name: str) -> str | None:
        return self.request.headers.get(name)

    def local(self) -> tuple[str, int] | None:
        transport = self.request.transport
        sockname = transport.get_extra_info("sockname") if transport else None
        return (sockname[0], sockname[1]) if sockname else None

    def body(self) -> AsyncIterable[bytes]:
        return self.request.content.iter_any()  # an iterator, not a generator to close

    async def stream(self, headers: dict[str, str]) -> Sink:
        response = web.StreamResponse(status=200, headers=headers)
        await response.prepare(self.request)
        self.sink = _Sink(response)
        return self.sink


def _response(reply: Reply) -> web.Response:
    response = web.Response(status=reply.status, body=reply.body, headers=reply.headers)
    if reply.close:
        response.force_close()
    return response


async def _handle(request: web.Request) -> web.StreamResponse:
    ex = _Exchange(request)
    reply = await request.app[_GATEWAY].handle(ex)
    if reply is not None:
        return _response(reply)
    if ex.sink is None:  # the client left before a reply began
        return web.Response(status=499)
    return ex.sink.response


def build_app(models: Models, keys: GatewayKeys, settings: GatewaySettings) -> web.Application:
    """The gateway's routes over ``models``; an empty ``keys`` lets every client in."""
    app = web.Application(client_max_size=settings.max_body_bytes)
    app[_GATEWAY] = Gateway(models, keys, settings)
    app.router.add_route("*", "/{path:.*}", _handle)
    return app
