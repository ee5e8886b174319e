"""Turns one resolved `Fault` into an HTTP reply on the simulated server.

The route's `Wire` supplies the bodies and stream events; this module decides
status codes, headers, timing (delay, hang, pacing) and how a stream ends.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from providers._sim_faults import ERROR_KINDS, Fault
from providers._sim_wire import Call, Wire, dumps, reply_text, split_text, token_usage

__all__ = ["error_status", "respond"]

Forever = Callable[[], Awaitable[None]]

_JSON = "application/json"
_JSON_HEADERS = {"Content-Type": _JSON}


def error_status(kind: str, route: str, code: int | None) -> int:
    """The HTTP status a fault ``kind`` gets on ``route``."""
    if kind == "overloaded":
        return 529 if route == "anthropic" else 503
    if kind == "quota":
        return {"anthropic": 400, "http": 402}.get(route, 429)
    if kind in ("context_too_long", "bad_request"):
        return 400
    if code is not None:
        return code
    return {"rate_limited": 429, "auth": 401, "model_not_found": 404}.get(kind, 500)


def _kind_for_status(code: int) -> str:
    """The error body to render for a bare ``Fault.status(code)``."""
    if code == 429:
        return "rate_limited"
    if code in (401, 403):
        return "auth"
    if code == 404:
        return "model_not_found"
    if code == 529:
        return "overloaded"
    if 400 <= code < 500 and code != 408:
        return "bad_request"
    return "server_error"


def _retry_headers(fault: Fault, route: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        if fault.http_date:
            when = time.time() + math.ceil(fault.retry_after)
            headers["Retry-After"] = email.utils.formatdate(when, usegmt=True)
        elif fault.retry_after == int(fault.retry_after):
            headers["Retry-After"] = str(int(fault.retry_after))
        else:
            headers["Retry-After"] = repr(float(fault.retry_after))
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = str(fault.retry_after_ms)
    if route == "openai":
        headers["x-ratelimit-limit-requests"] = "3"
        headers["x-ratelimit-remaining-requests"] = "0"
        headers["x-ratelimit-reset-requests"] = f"{fault.retry_after or 1}s"
    elif route == "anthropic":
        headers["anthropic-ratelimit-requests-limit"] = "3"
        headers["anthropic-ratelimit-requests-remaining"] = "0"
    return headers


def _error(wire: Wire, call: Call, fault: Fault) -> web.Response:
    kind = fault.kind
    status = error_status(kind, wire.route, fault.status_code)
    render_kind = _kind_for_status(status) if kind == "status" else kind
    headers = _retry_headers(fault, wire.route) if render_kind == "rate_limited" else {}
    if fault.headers:
        headers.update(fault.headers)
    body = fault.body
    if body is None:
        return _json(status, wire.error(render_kind, status, call), headers)
    if not isinstance(body, str):
        return _json(status, dict(body), headers)
    content_type = _JSON if body[:1] in "{[" and body else "text/plain"
    if body.lstrip().startswith("<"):
        content_type = "text/html"
    if "Content-Type" not in headers and "content-type" not in headers:
        headers["Content-Type"] = f"{content_type}; charset=utf-8"
    return web.Response(status=status, text=body, headers=headers)


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> web.Response:
    if headers:
        headers.setdefault("Content-Type", _JSON)
    return web.Response(status=status, body=dumps(obj).encode(), headers=headers or _JSON_HEADERS)


async def _stream(
    request: web.BaseRequest,
    wire: Wire,
    call: Call,
    events: list[bytes],
    interval: float,
) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Cache-Control": "no-cache"})
    response.content_type = wire.stream_content_type(call)
    await response.prepare(request)
    if interval > 0:
        for i, event in enumerate(events):
            if i:
                await asyncio.sleep(interval)
            await response.write(event)
    elif events:
        await response.write(b"".join(events))
    return response


async def _cut(
    request: web.BaseRequest, wire: Wire, call: Call, fault: Fault, forever: Forever
) -> web.StreamResponse:
    text = reply_text(call, fault.text)
    if call.stream:
        pieces = split_text(text, fault.after + 1)[: fault.after]
        events = wire.stream(call, pieces, token_usage(call, text, None), terminate=False)
        response = await _stream(request, wire, call, events, 0.0)
        if fault.how == "end":
            await response.write_eof()
            return response
    else:
        full = dumps(wire.reply(call, text, token_usage(call, text, None))).encode()
        response = web.StreamResponse(status=200)
        response.content_type = _JSON
        response.content_length = len(full)
        await response.prepare(request)
        await response.write(full[: len(full) // 2])
    if fault.how != "hang" and request.transport is not None:
        request.transport.abort()  # the handler is cancelled as the connection goes
    await forever()
    return response


async def respond(
    request: web.BaseRequest, wire: Wire, call: Call, fault: Fault, forever: Forever
) -> web.StreamResponse:
    """Answer ``call`` as ``fault`` says; ``forever`` waits until the client goes away."""
    fault = fault.pick()
    while fault.kind == "delay":
        await asyncio.sleep(fault.seconds)
        assert fault.then is not None
        fault = fault.then.pick()
    kind = fault.kind
    if kind == "ok":
        text = reply_text(call, fault.text)
        usage = token_usage(call, text, fault.usage)
        if call.stream:
            events = wire.stream(call, split_text(text, fault.chunks), usage, terminate=True)
            return await _stream(request, wire, call, events, fault.interval)
        return _json(200, wire.reply(call, text, usage))
    if kind in ERROR_KINDS:
        return _error(wire, call, fault)
    if kind == "hang":
        await forever()
        raise AssertionError("unreachable: forever() returned")  # pragma: no cover
    if kind == "cut_stream":
        return await _cut(request, wire, call, fault, forever)
    if call.stream:
        if kind == "content_filter":
            events = wire.filtered_stream(call, fault.prompt_blocked)
        elif kind == "missing_field":
            events = wire.missing_stream(call)
        else:  # invalid_json: a broken event in the middle of a normal stream
            text = reply_text(call, None)
            events = wire.stream(
                call, split_text(text, 3), token_usage(call, text, None), terminate=True
            )
            events.insert(len(events) // 2, wire.broken_event())
        return await _stream(request, wire, call, events, 0.0)
    if kind == "content_filter":
        return _json(200, wire.filtered(call, fault.prompt_blocked))
    if kind == "missing_field":
        return _json(200, wire.missing(call))
    text = reply_text(call, None)
    full = dumps(wire.reply(call, text, token_usage(call, text, None)))
    return web.Response(status=200, text=full[: len(full) // 2], content_type=_JSON)


def parse_body(raw: bytes) -> dict[str, Any] | None:
    """The JSON object in a request body, or None when it is not one."""
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
