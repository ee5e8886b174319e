"""Running a client's call and answering it, whole or as a stream, whatever the HTTP server.

:func:`run_whole` answers with one :class:`~providers.serve.exchange.Reply`;
:func:`stream` writes server-sent events on the exchange as text arrives. Both
answer a failure in the client's wire format (:func:`failure_reply`).
"""

from __future__ import annotations

import time

from orchestrator.errors import FallbackError
from orchestrator.events import emit, error_fields
from orchestrator.types import Result
from providers.serve.call import ClientCall, Streamer, Wire, usage_of
from providers.serve.exchange import Exchange, Reply, Sink, json_reply
from providers.serve.failures import Failure, failure_of
from providers.serve.models import Model

__all__ = ["failed", "failure_reply", "run_whole", "stream"]

#: A keep-alive (the wire's own) goes out for an upstream event without text, at most every
#: ``_PING_EVERY`` seconds, so the client hears when the upstream moves (its stop reason
#: an interval ahead of its usage: the end, written later, waits for both).
_PING_EVERY = 0.05
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
#: The model name the client asked for (replies name the model that answered).
_ALIAS = "x-failover-model-alias"


def failure_reply(wire: Wire, failure: Failure, attempts: int | None = None) -> Reply:
    """``failure`` in ``wire``'s error format, with ``Retry-After`` when it has one."""
    status, body = wire.error(failure)
    headers = {}
    if failure.retry_after is not None and status >= 400:
        headers["Retry-After"] = str(failure.retry_after)
    if attempts is not None:
        headers["x-failover-attempts"] = str(attempts)
    reply = json_reply(status, body, headers)
    reply.close = status in (408, 413)  # the rest of the body is not worth reading
    return reply


def failed(error: BaseException) -> Failure:
    """``failure_of(error)``; a gateway fault (not a provider's) is also reported as an event."""
    failure = failure_of(error)
    if failure.kind == "internal":
        emit("error", "gateway_error", **error_fields(error))
    return failure


def _attempts(error: BaseException) -> int | None:
    return len(error.attempts) if isinstance(error, FallbackError) else None


def _result_headers(call: ClientCall, result: Result) -> dict[str, str]:
    headers = {"x-failover-attempts": str(len(result.attempts)), _ALIAS: call.model}
    if result.handled_by is not None:
        headers["x-failover-handled-by"] = result.handled_by
    return headers


async def run_whole(wire: Wire, call: ClientCall, model: Model) -> Reply:
    """Run ``call`` to its end and answer it in one reply."""
    try:
        result = await model.run(call.request, call.affinity)
    except Exception as exc:
        return failure_reply(wire, failed(exc), _attempts(exc))
    reply = wire.reply(call, result)
    return json_reply(200, reply, _result_headers(call, result), _plain(result))


def _plain(result: Result) -> bool:
    """Whether a wire's reply to ``result`` holds plain JSON types only (see
    :func:`~providers.serve.call.encoded`): a wire adds its own str, int, bool and None
    values to what it takes from ``result``, the provider's, which may be of any type. So:
    its text, model and token counts exactly str and int, and no tool calls (whose
    arguments may hold anything)."""
    usage = usage_of(result)
    return (
        not result.tool_calls
        and type(result.text) is str
        and (result.model is None or type(result.model) is str)
        and type(usage.input_tokens) is int
        and type(usage.output_tokens) is int
    )


async def stream(ex: Exchange, wire: Wire, call: ClientCall, model: Model) -> Reply | None:
    """Stream text as it arrives; the status line waits for the first content, so a chain that
    fails before any still gets a proper error status (a reply). Tool-call pieces go out whole
    at the end; meanwhile an SSE comment for each upstream event without text keeps the
    client in step with the upstream (and its idle timer from firing). ``None`` once the
    stream was sent (or the client left)."""
    streamer = wire.streamer(call)  # until content names the provider that answers
    sink: Sink | None = None
    pinged = 0.0
    try:
        async with model.stream(call.request, call.affinity) as chunks:
            async for chunk in chunks:
                if chunk == "":  # PROGRESS: the upstream moved without text
                    if sink and streamer.keep_alive and time.monotonic() - pinged >= _PING_EVERY:
                        pinged = time.monotonic()
                        await sink.write(streamer.keep_alive)
                    continue
                out = b""
                if sink is None:
                    answering = getattr(chunks, "answering", None)
                    streamer = wire.streamer(call.answered_by(model.model_of(answering)))
                    sink = await _open(ex, _answering_headers(call, answering))
                    out = streamer.start()  # before text(): a streamer may number its events
                if isinstance(chunk, str):
                    out += streamer.text(chunk)
                elif not out and time.monotonic() - pinged >= _PING_EVERY:
                    out, pinged = streamer.keep_alive, time.monotonic()
                if out:
                    await sink.write(out)
            result = chunks.result
    except ConnectionResetError:  # the client left: the run was cancelled on the way out
        return None if sink is not None else Reply(499, b"")
    except Exception as exc:
        return await _failed_stream(ex, wire, streamer, sink, exc)
    if sink is None:  # no text: tool calls only, or an empty reply
        streamer = wire.streamer(call.answered_by(result.model))
        sink = await _open(ex, _result_headers(call, result))
        await sink.write(streamer.start())
    await sink.write(streamer.end(result))
    await sink.end()
    return None


async def _failed_stream(
    ex: Exchange, wire: Wire, streamer: Streamer, sink: Sink | None, exc: Exception
) -> Reply | None:
    """The stream's failure: an error reply before any content, else its last event."""
    failure = failed(exc)
    if sink is None:
        if wire.error(failure)[0] >= 400:
            return failure_reply(wire, failure, _attempts(exc))
        # A reply-shaped failure (a refusal): the client asked for a stream, so it is one.
        sink = await _open(ex, {})
        await sink.write(streamer.start())
    await sink.write(streamer.error(failure))
    await sink.end()
    return None


def _answering_headers(call: ClientCall, provider: str | None) -> dict[str, str]:
    """A stream's status line goes out with its first content, before the run ends: it names
    the provider whose text that is (the attempt count is known only at the end)."""
    headers = {_ALIAS: call.model}
    if provider:
        headers["x-failover-handled-by"] = provider
    return headers


async def _open(ex: Exchange, headers: dict[str, str]) -> Sink:
    return await ex.stream({**_SSE_HEADERS, **headers})
