"""The gateway as an aiohttp application: routes, auth, load shedding, and the run of a call.

``build_app(models, keys, settings)`` returns the :class:`aiohttp.web.Application`;
:mod:`providers.serve.server` runs it. Every model endpoint follows the same
steps: authenticate (401), shed load (503 beyond ``max_in_flight``), read the
body within its cap, deadline and rate (:mod:`providers.serve.intake`), parse it
in the client's wire format, find the model, run or stream it, and answer in the
same format, errors included. Any other path gets a 404 in the client's format
naming the base URL to use (:mod:`providers.serve.misrouted`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiohttp import web

from orchestrator.errors import FallbackError
from orchestrator.events import emit, error_fields
from orchestrator.types import Result
from providers.serve import anthropic_wire, fields
from providers.serve.anthropic_wire import AnthropicWire
from providers.serve.auth import METRICS_ENV, GatewayKeys, presented_key
from providers.serve.call import ClientCall, Wire, dumps
from providers.serve.failures import Failure, failure_of
from providers.serve.fields import body_object
from providers.serve.intake import read_body
from providers.serve.misrouted import misrouted
from providers.serve.models import Model, Models
from providers.serve.openai_wire import OpenAIWire
from providers.serve.probes import healthz, metrics, readyz
from providers.serve.responses_wire import ResponsesWire
from providers.serve.settings import GatewaySettings
from providers.serve.tokens import estimate_tokens

__all__ = ["MODELS", "build_app"]

MODELS: web.AppKey[Models] = web.AppKey("models", Models)
_KEYS: web.AppKey[GatewayKeys] = web.AppKey("keys", GatewayKeys)
_SETTINGS: web.AppKey[GatewaySettings] = web.AppKey("settings", GatewaySettings)
_LOAD: web.AppKey[list[int]] = web.AppKey("load", list)

_OPENAI = OpenAIWire()
_ANTHROPIC = AnthropicWire()
_RESPONSES = ResponsesWire()
_WIRES: dict[str, Wire] = {"openai": _OPENAI, "anthropic": _ANTHROPIC, "responses": _RESPONSES}
#: An SSE comment (every client's parser skips it), at most every ``_PING_EVERY`` seconds.
_PING = b": keep-alive\n\n"
_PING_EVERY = 1.0
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
#: The model name the client asked for (replies name the model that answered).
_ALIAS = "x-failover-model-alias"
#: The call's affinity key, before the body's prompt_cache_key / user / metadata.user_id.
_AFFINITY = "x-failover-affinity"


def build_app(models: Models, keys: GatewayKeys, settings: GatewaySettings) -> web.Application:
    """The gateway's routes over ``models``; an empty ``keys`` lets every client in."""
    app = web.Application(client_max_size=settings.max_body_bytes)
    app[MODELS] = models
    app[_KEYS] = keys
    app[_SETTINGS] = settings
    app[_LOAD] = [0]
    app.router.add_get("/", healthz)  # clients probe the base URL (Claude Code sends HEAD /)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/v1/models", _guarded(_list_models))
    app.router.add_get("/v1/models/{name}", _guarded(_one_model))
    app.router.add_post("/v1/chat/completions", _endpoint(_OPENAI))
    app.router.add_post("/v1/responses", _endpoint(_RESPONSES))
    app.router.add_post("/v1/messages", _endpoint(_ANTHROPIC))
    app.router.add_post("/v1/messages/count_tokens", _count_tokens)
    app.router.add_route("*", "/{path:.*}", _misrouted)  # last: any other path
    return app


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, text=dumps(body), content_type="application/json", headers=headers
    )


def _failure(wire: Wire, failure: Failure, attempts: int | None = None) -> web.Response:
    status, body = wire.error(failure)
    headers = {}
    if failure.retry_after is not None and status >= 400:
        headers["Retry-After"] = str(failure.retry_after)
    if attempts is not None:
        headers["x-failover-attempts"] = str(attempts)
    response = _json(status, body, headers)
    if status in (408, 413):  # the rest of the body is not worth reading
        response.force_close()
    return response


def _presents(request: web.Request, allows: Callable[[str | None], bool]) -> bool:
    headers = request.headers
    # Either header may carry the gateway key (the other may hold a vendor key); both are
    # always compared, so the time taken does not say which one matched.
    bearer = allows(presented_key(headers.get("Authorization"), None))
    return allows(presented_key(None, headers.get("x-api-key"))) | bearer


def _authenticated(request: web.Request) -> bool:
    keys = request.app[_KEYS]
    return not keys or _presents(request, keys.allows)


async def _metrics(request: web.Request) -> web.Response:
    """``/metrics`` for a gateway or metrics key, or anyone with ``public_metrics``."""
    keys = request.app[_KEYS]
    public = request.app[_SETTINGS].public_metrics or not keys
    if public or _presents(request, keys.allows_metrics):
        return await metrics(request)
    return _failure(_OPENAI, _METRICS_REFUSED)


def _refused() -> Failure:
    return Failure(
        401,
        "authentication",
        "a valid gateway key is required (Authorization: Bearer KEY or x-api-key: KEY)",
    )


_METRICS_REFUSED = Failure(
    401,
    "authentication",
    f"/metrics needs a gateway key or a metrics key ({METRICS_ENV}, --metrics-keys-file), "
    "or a gateway started with --public-metrics",
)


async def _misrouted(request: web.Request) -> web.Response:
    wire, failure = misrouted(request)
    return _failure(_WIRES[wire], failure)


def _guarded(handler: Any) -> Any:
    """``handler`` behind the gateway key (errors in OpenAI's shape: these are GET routes)."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        if not _authenticated(request):
            return _failure(_OPENAI, _refused())
        response: web.StreamResponse = await handler(request)
        return response

    return guarded


async def _list_models(request: web.Request) -> web.Response:
    # One list both SDKs read: OpenAI's fields and Anthropic's side by side.
    data = [_model_entry(name) for name in request.app[MODELS].names()]
    body = {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
    return _json(200, body)


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": 0,
        "owned_by": "failover",
        "type": "model",
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
    }


async def _one_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if request.app[MODELS].get(name) is None:
        return _failure(_OPENAI, _unknown_model(request, name))
    return _json(200, _model_entry(name))


def _unknown_model(request: web.Request, name: str) -> Failure:
    names = request.app[MODELS].names()
    shown = name if len(name) <= 64 else name[:64] + "..."
    return Failure(404, "not_found", f"no model {shown!r}; available: {', '.join(names)}")


async def _read_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object (see :func:`providers.serve.intake.read_body`)."""
    return body_object(await read_body(request, request.app[_SETTINGS]))


class _Slot:
    """One of the worker's ``max_in_flight`` places; ``taken`` is False when none was free."""

    def __init__(self, app: web.Application) -> None:
        self._load = app[_LOAD]
        self.taken = self._load[0] < app[_SETTINGS].max_in_flight
        if self.taken:
            self._load[0] += 1

    def __enter__(self) -> _Slot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.taken:
            self._load[0] -= 1


_BUSY = Failure(503, "overloaded", "the gateway is at its in-flight limit; retry shortly", 1)


def _endpoint(wire: Wire) -> Any:
    """The handler of a model endpoint speaking ``wire``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if not _authenticated(request):  # before a slot: a caller without a key is not load
            return _failure(wire, _refused())
        with _Slot(request.app) as slot:
            if not slot.taken:
                return _failure(wire, _BUSY)
            try:
                call = wire.parse(await _read_body(request))
                key = fields.affinity(request.headers.get(_AFFINITY), call.affinity)
                call = replace(call, affinity=key)
            except Exception as exc:  # BadRequest, or a parsing gap: still the client's shape
                return _failure(wire, _failed(exc))
            model = request.app[MODELS].get(call.model)
            if model is None:
                return _failure(wire, _unknown_model(request, call.model))
            if call.stream:
                return await _stream(request, wire, call, model)
            return await _whole(wire, call, model)

    return handle


def _result_headers(call: ClientCall, result: Result) -> dict[str, str]:
    headers = {"x-failover-attempts": str(len(result.attempts)), _ALIAS: call.model}
    if result.handled_by is not None:
        headers["x-failover-handled-by"] = result.handled_by
    return headers


def _answered_by(call: ClientCall, model: str | None) -> ClientCall:
    """``call`` as the reply names it: the model that answered, when known (the client's
    alias stays in the ``x-failover-model-alias`` header)."""
    return replace(call, model=model) if model else call


async def _whole(wire: Wire, call: ClientCall, model: Model) -> web.Response:
    try:
        result = await model.run(call.request, call.affinity)
    except Exception as exc:
        return _failure(wire, _failed(exc), _attempts(exc))
    reply = wire.reply(_answered_by(call, result.model), result)
    return _json(200, reply, _result_headers(call, result))


def _failed(error: BaseException) -> Failure:
    """``failure_of(error)``; a gateway fault (not a provider's) is also reported as an event."""
    failure = failure_of(error)
    if failure.kind == "internal":
        emit("error", "gateway_error", **error_fields(error))
    return failure


def _attempts(error: BaseException) -> int | None:
    return len(error.attempts) if isinstance(error, FallbackError) else None


async def _stream(
    request: web.Request, wire: Wire, call: ClientCall, model: Model
) -> web.StreamResponse:
    """Stream text as it arrives; the status line waits for the first content, so a chain that
    fails before any still gets a proper error status. Tool-call pieces go out whole at the
    end; meanwhile an SSE comment now and then keeps the client's idle timer from firing."""
    streamer = wire.streamer(call)  # until content names the provider that answers
    response: web.StreamResponse | None = None
    pinged = 0.0
    try:
        async with model.stream(call.request, call.affinity) as chunks:
            async for chunk in chunks:
                out = b""
                if response is None:
                    answering = getattr(chunks, "answering", None)
                    streamer = wire.streamer(_answered_by(call, model.model_of(answering)))
                    response = await _open(request, _answering_headers(call, answering))
                    out = streamer.start()  # before text(): a streamer may number its events
                if isinstance(chunk, str):
                    out += streamer.text(chunk)
                elif not out and time.monotonic() - pinged >= _PING_EVERY:
                    out, pinged = _PING, time.monotonic()
                if out:
                    await response.write(out)
            result = chunks.result
    except ConnectionResetError:  # the client left: the run was cancelled on the way out
        return response or web.Response(status=499)
    except Exception as exc:
        failure = _failed(exc)
        if response is None:
            if wire.error(failure)[0] >= 400:
                return _failure(wire, failure, _attempts(exc))
            # A reply-shaped failure (a refusal): the client asked for a stream, so it is one.
            response = await _open(request, {})
            await response.write(streamer.start())
        await response.write(streamer.error(failure))
        return response
    if response is None:  # no text: tool calls only, or an empty reply
        streamer = wire.streamer(_answered_by(call, result.model))
        response = await _open(request, _result_headers(call, result))
        await response.write(streamer.start())
    await response.write(streamer.end(result))
    await response.write_eof()
    return response


def _answering_headers(call: ClientCall, provider: str | None) -> dict[str, str]:
    """A stream's status line goes out with its first content, before the run ends: it names
    the provider whose text that is (the attempt count is known only at the end)."""
    headers = {_ALIAS: call.model}
    if provider:
        headers["x-failover-handled-by"] = provider
    return headers


async def _open(request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={**_SSE_HEADERS, **headers})
    await response.prepare(request)
    return response


async def _count_tokens(request: web.Request) -> web.StreamResponse:
    if not _authenticated(request):
        return _failure(_ANTHROPIC, _refused())
    try:
        model, parsed = anthropic_wire.parse_request(
            await _read_body(request), need_max_tokens=False
        )
    except Exception as exc:
        return _failure(_ANTHROPIC, _failed(exc))
    if request.app[MODELS].get(model) is None:
        return _failure(_ANTHROPIC, _unknown_model(request, model))
    return _json(200, {"input_tokens": estimate_tokens(parsed)})
