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
from collections.abc import Coroutine
from typing import Any

from providers.simulator.benchmark import BENCHMARK_KINDS, benchmark_reply
from providers.simulator.faults import ERROR_KINDS, Fault
from providers.simulator.hostile import HOSTILE_KINDS, hostile
from providers.simulator.http11 import Exchange
from providers.simulator.wires.base import Call, Wire, dumps, reply_text, split_text, token_usage

__all__ = ["error_status", "parse_body", "respond", "send_json"]

_JSON = "application/json"
_JSON_HEADERS = {"Content-Type": _JSON}


def error_status(kind: str, route: str, code: int | None) -> int:
    """The HTTP status a fault ``kind`` gets on ``route``."""
    if kind == "overloaded":
        return 529 if route in ("anthropic", "vertex_anthropic") else 503
    if kind == "quota":
        return {"anthropic": 400, "http": 402, "bedrock": 400}.get(route, 429)
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
    if route == "azure" and fault.retry_after is not None and fault.retry_after_ms is None:
        headers["retry-after-ms"] = str(round(fault.retry_after * 1000))  # Azure sends both
    if route in ("openai", "responses", "azure"):
        headers["x-ratelimit-limit-requests"] = "3"
        headers["x-ratelimit-remaining-requests"] = "0"
        headers["x-ratelimit-reset-requests"] = f"{fault.retry_after or 1}s"
    elif route == "anthropic":  # Vertex answers its 429s itself: no Anthropic headers
        headers["anthropic-ratelimit-requests-limit"] = "3"
        headers["anthropic-ratelimit-requests-remaining"] = "0"
    return headers


def _error(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    kind = fault.kind
    status = error_status(kind, wire.route, fault.status_code)
    render_kind = _kind_for_status(status) if kind == "status" else kind
    headers = _retry_headers(fault, wire.route) if render_kind == "rate_limited" else {}
    headers.update(wire.error_headers(render_kind, status))
    body = fault.body
    if body is None:
        payload = dumps(wire.error(render_kind, status, call)).encode()
        content_type = _JSON
    elif not isinstance(body, str):
        payload = dumps(dict(body)).encode()
        content_type = _JSON
    else:
        payload = body.encode()
        stripped = body.lstrip()
        content_type = "text/plain; charset=utf-8"
        if stripped[:1] in ("{", "["):
            content_type = _JSON
        elif stripped.startswith("<"):
            content_type = "text/html; charset=utf-8"
    headers["Content-Type"] = content_type
    for name, value in (fault.headers or {}).items():
        if name.lower() == "content-type":
            headers.pop("Content-Type")
        headers[name] = value
    ex.send(status, headers, payload)


def send_json(ex: Exchange, status: int, obj: Any) -> None:
    """Write a complete JSON reply."""
    ex.send(status, dict(_JSON_HEADERS), dumps(obj).encode())


def _stream_headers(wire: Wire, call: Call) -> dict[str, str]:
    return {"Content-Type": wire.stream_content_type(call), "Cache-Control": "no-cache"}


def _stream_now(
    ex: Exchange, wire: Wire, call: Call, events: list[bytes], end: bool = True
) -> None:
    ex.start_stream(
        200, {"Content-Type": wire.stream_content_type(call), "Cache-Control": "no-cache"}
    )
    ex.write_chunk(b"".join(events))
    if end:
        ex.end_stream()


async def _stream_paced(
    ex: Exchange, wire: Wire, call: Call, events: list[bytes], interval: float
) -> None:
    ex.start_stream(
        200, {"Content-Type": wire.stream_content_type(call), "Cache-Control": "no-cache"}
    )
    for i, event in enumerate(events):
        if i:
            await asyncio.sleep(interval)
        ex.write_chunk(event)
    ex.end_stream()


def _cut(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> Coroutine[Any, Any, None] | None:
    text = reply_text(call, fault.text)
    if call.stream:
        pieces = split_text(text, fault.after + 1)[: fault.after]
        events = wire.stream(call, pieces, token_usage(call, text, None), terminate=False)
        _stream_now(ex, wire, call, events, end=fault.how == "end")
        if fault.how == "end":
            return None
    else:
        full = dumps(wire.reply(call, text, token_usage(call, text, None))).encode()
        ex.send_partial(200, dict(_JSON_HEADERS), len(full), full[: len(full) // 2])
    if fault.how == "hang":
        quiet = not (call.stream and fault.interval > 0 and wire.keep_alive)
        return _forever() if quiet else _keep_alive(ex, fault.interval, wire.keep_alive)
    ex.abort()
    return None


async def _keep_alive(ex: Exchange, interval: float, keep_alive: bytes) -> None:
    """An SSE comment every ``interval`` seconds, until the client goes away."""
    while ex.backlog() is not None:
        await asyncio.sleep(interval)
        ex.write_chunk(keep_alive)


async def _forever() -> None:
    """Wait until cancelled: the client went away or the server is stopping."""
    await asyncio.get_running_loop().create_future()


async def _delayed(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    while fault.kind == "delay":
        await asyncio.sleep(fault.seconds)
        assert fault.then is not None
        fault = fault.then.pick()
    pending = respond(ex, wire, call, fault)
    if pending is not None:
        await pending


async def _first_token(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> None:
    """Headers now; silence or keep-alive comments for ``fault.seconds``; then the reply."""
    assert fault.then is not None
    then = fault.then.pick()
    if not call.stream or then.kind != "ok":
        await asyncio.sleep(fault.seconds)
        pending = respond(ex, wire, call, then)
        if pending is not None:
            await pending
        return
    text = reply_text(call, then.text)
    usage = token_usage(call, text, then.usage)
    events = wire.stream(call, split_text(text, then.chunks), usage, terminate=True)
    ex.start_stream(200, _stream_headers(wire, call))
    loop = asyncio.get_running_loop()
    first_at = loop.time() + fault.seconds
    while fault.interval > 0 and wire.keep_alive and loop.time() + fault.interval < first_at:
        await asyncio.sleep(fault.interval)
        ex.write_chunk(wire.keep_alive)
    await asyncio.sleep(max(0.0, first_at - loop.time()))
    for i, event in enumerate(events):
        if i and then.interval > 0:
            await asyncio.sleep(then.interval)
        ex.write_chunk(event)
    ex.end_stream()


def respond(ex: Exchange, wire: Wire, call: Call, fault: Fault) -> Coroutine[Any, Any, None] | None:
    """Answer ``call`` as ``fault`` says: at once (returns None), or through the
    returned coroutine when the answer involves waiting (delay, hang, pacing)."""
    fault = fault.pick()
    kind = fault.kind
    call.tool_calls = fault.tool_calls
    if kind == "ok":
        text = reply_text(call, fault.text)
        usage = token_usage(call, text, fault.usage)
        if not call.stream:
            send_json(ex, 200, wire.reply(call, text, usage))
            return None
        events = wire.stream(call, split_text(text, fault.chunks), usage, terminate=True)
        if fault.interval > 0:
            return _stream_paced(ex, wire, call, events, fault.interval)
        _stream_now(ex, wire, call, events)
        return None
    if kind in ERROR_KINDS:
        _error(ex, wire, call, fault)
        return None
    if kind == "no_prefill":
        assert fault.then is not None
        if not _ends_with_assistant(call.body):
            return respond(ex, wire, call, fault.then)
        render = "no_prefill" if wire.route in ("anthropic", "vertex_anthropic") else "bad_request"
        send_json(ex, 400, wire.error(render, 400, call))
        return None
    if kind == "delay":
        return _delayed(ex, wire, call, fault)
    if kind == "first_token":
        return _first_token(ex, wire, call, fault)
    if kind == "hang":
        return _forever()
    if kind == "cut_stream":
        return _cut(ex, wire, call, fault)
    if kind == "stream_error":
        return _stream_error(ex, wire, call, fault)
    if kind in HOSTILE_KINDS:
        return hostile(ex, wire, call, fault)
    if kind in BENCHMARK_KINDS:
        return benchmark_reply(ex, wire, call, fault, respond)
    refusal = wire.prompt_refusal(call) if kind == "content_filter" else None
    if refusal is not None and fault.prompt_blocked:
        send_json(ex, 400, refusal)
        return None
    if call.stream:
        if kind == "content_filter":
            events = wire.filtered_stream(call, fault.prompt_blocked)
        elif kind == "missing_field":
            events = wire.missing_stream(call)
        else:  # invalid_json: a broken event in the middle of a normal stream
            text = reply_text(call, None)
            usage = token_usage(call, text, None)
            events = wire.stream(call, split_text(text, 3), usage, terminate=True)
            events.insert(len(events) // 2, wire.broken_event())
        _stream_now(ex, wire, call, events)
    elif kind == "content_filter":
        send_json(ex, 200, wire.filtered(call, fault.prompt_blocked))
    elif kind == "missing_field":
        send_json(ex, 200, wire.missing(call))
    else:  # invalid_json: a reply cut in the middle of its JSON
        text = reply_text(call, None)
        full = dumps(wire.reply(call, text, token_usage(call, text, None))).encode()
        ex.send(200, dict(_JSON_HEADERS), full[: len(full) // 2])
    return None


def _stream_error(
    ex: Exchange, wire: Wire, call: Call, fault: Fault
) -> Coroutine[Any, Any, None] | None:
    """``fault.after`` chunks, then ``fault.then`` (an error) as the wire's in-stream error
    event; not streamed, ``fault.then`` as an HTTP error, as before a stream."""
    assert fault.then is not None
    error = fault.then
    if not call.stream:
        return respond(ex, wire, call, error)
    status = error_status(error.kind, wire.route, error.status_code)
    render = _kind_for_status(status) if error.kind == "status" else error.kind
    text = reply_text(call, fault.text)
    pieces = split_text(text, fault.after + 1)[: fault.after]
    events = wire.stream(call, pieces, token_usage(call, text, None), terminate=False)
    _stream_now(ex, wire, call, [*events, wire.stream_error(render, status, call)])
    return None


def _ends_with_assistant(body: Any) -> bool:
    """Whether a request's turns end with the assistant's (Gemini: the model's): a prefill."""
    turns = body.get("messages") or body.get("contents") if isinstance(body, dict) else None
    last = turns[-1] if isinstance(turns, list) and turns else None
    return isinstance(last, dict) and last.get("role") in ("assistant", "model")


def parse_body(raw: bytes) -> dict[str, Any] | None:
    """The JSON object in a request body, or None when it is not one."""
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
