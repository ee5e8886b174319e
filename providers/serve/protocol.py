"""The gateway's HTTP edge: aiohttp's protocol with nothing of a bad request echoed back.

aiohttp answers a request it cannot parse (bare-LF line endings, a bad header)
with a 400 whose body quotes the parser's message, which holds the raw bytes
read, ``Authorization`` header and prompt included, and logs the same with a
whole traceback. :class:`GatewayRunner` serves the application through
:class:`_Handler` instead: the reply names the status only, and the log gets
one bounded line per malformed request (the error's type, never its message).
Request bodies reach the handlers still encoded (``auto_decompress=False``):
:mod:`providers.serve.intake` inflates them in bounded slices.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

__all__ = ["GatewayRunner"]


class _Handler(RequestHandler):
    """One connection; what it says about a failed request is the status, never its bytes."""

    def log_exception(self, *args: Any, **kw: Any) -> None:
        # aiohttp passes the request's own bytes in exception messages: name the type only.
        error = kw.get("exc_info")
        name = type(error).__name__ if isinstance(error, BaseException) else "error"
        what = str(args[0])[:80] if len(args) == 1 else "error handling a request"
        self.logger.error("gateway: %s (%s)", what, name[:64])

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A bare status reply and one log line; the connection is closed after it."""
        name = type(exc).__name__ if exc is not None else "error"
        self.logger.warning(
            "gateway: malformed request from %s: %s (HTTP %d)",
            str(request.remote)[:64],
            name[:64],
            status,
        )
        if request.writer.output_size > 0:  # a reply had begun: the connection is broken
            raise ConnectionError("a reply was already under way")
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        response = web.Response(status=status, text=f"{status} {phrase}\n")
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """An :class:`aiohttp.web.AppRunner` whose connections answer malformed requests with
    their status only (see the module docstring), and leave request bodies encoded."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, auto_decompress=False, **kwargs)

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()
        return _Server(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,
            **made._kwargs,
        )
