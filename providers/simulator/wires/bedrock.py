"""Amazon Bedrock's Converse and ConverseStream, as the simulated server speaks them
(route ``bedrock``: ``POST /bedrock/model/{modelId}/converse`` and ``/converse-stream``).

JSON replies carry ``output.message.content`` blocks (``text``, ``toolUse``),
``stopReason`` and ``usage``; streams are AWS event-stream frames (``messageStart``,
``contentBlockStart``/``Delta``/``Stop``, ``messageStop``, ``metadata``) with their
CRCs. Errors are ``{"message"}`` bodies named by the ``x-amzn-ErrorType`` header;
inside a stream, ``exception`` frames. Every request must be SigV4-signed
(:mod:`providers.simulator.sigv4`). The InvokeModel routes (Anthropic's Messages
shape) are :mod:`providers.simulator.wires.bedrock_invoke`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, ScriptedCall, Tokens, Wire, dumps, last_text_block
from providers.simulator.wires.eventstream import EVENT_STREAM, event, exception, frame

__all__ = ["PREFIX", "BedrockWire", "error_headers", "error_type", "model_and_operation"]

PREFIX = "/bedrock/model/"
_TYPE_URL = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
_SERVER_ERRORS = {
    408: ("ModelTimeoutException", "Model has timed out in processing the request."),
    424: ("ModelErrorException", "The model encountered an error processing the request."),
    503: ("ServiceUnavailableException", "Bedrock is unable to process your request."),
}
_ERRORS: dict[str, tuple[str, str]] = {
    "rate_limited": ("ThrottlingException", "Too many requests, please wait before trying again."),
    "quota": (
        "ServiceQuotaExceededException",
        "You have reached the quota of tokens per day for this model in this account.",
    ),
    "overloaded": _SERVER_ERRORS[503],
    "server_error": (
        "InternalServerException",
        "The server encountered an internal error while processing the request.",
    ),
    "auth": (
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    ),
    "forbidden": (
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
    ),
    "model_not_found": ("ResourceNotFoundException", "Model not found: {model}"),
    "bad_request": (
        "ValidationException",
        "Malformed input request: #: required key [messages] not found, please reformat "
        "your input and try again.",
    ),
    "context_too_long": ("ValidationException", "Input is too long for requested model."),
}


def model_and_operation(path: str) -> tuple[str, str] | None:
    """``(modelId, operation)`` of a Bedrock runtime ``path``, else None."""
    if not path.startswith(PREFIX):
        return None
    model, _, operation = path[len(PREFIX) :].rpartition("/")
    return (model, operation) if model else None


def error_type(kind: str, status: int) -> tuple[str, str]:
    """The exception type and message Bedrock answers fault ``kind`` with at ``status``."""
    if kind == "auth" and status == 403:
        kind = "forbidden"
    if kind in ("server_error", "bad_request") and status in _SERVER_ERRORS:
        return _SERVER_ERRORS[status]
    return _ERRORS.get(kind, _ERRORS["server_error"])


def error_headers(kind: str, status: int) -> dict[str, str]:
    """The ``x-amzn-ErrorType`` header of that error."""
    return {"x-amzn-ErrorType": error_type(kind, status)[0] + _TYPE_URL}


class BedrockWire(Wire):
    """Converse and ConverseStream (``POST /bedrock/model/{modelId}/converse[-stream]``)."""

    route = "bedrock"
    keep_alive = b""  # the event stream has no comments: a quiet stream sends nothing

    def stream_content_type(self, call: Call) -> str:
        return EVENT_STREAM

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        model, operation = model_and_operation(path) or ("", "")
        prompt = ""
        for m in reversed(body.get("messages") or []):
            if isinstance(m, Mapping) and m.get("role") == "user":
                prompt = last_text_block(m.get("content"))
                break
        call = Call(self.route, model, body, operation.endswith("-stream"), prompt, seq)
        config: Mapping[str, Any] = body.get("toolConfig") or {}
        specs = [t.get("toolSpec") for t in config.get("tools") or [] if isinstance(t, Mapping)]
        tools: list[Mapping[str, Any]] = [t for t in specs if isinstance(t, Mapping)]
        choice = config.get("toolChoice") or {}
        name = None
        if isinstance(choice, Mapping) and isinstance(choice.get("tool"), Mapping):
            name = choice["tool"].get("name")
        elif isinstance(choice, Mapping) and "any" in choice and tools:
            name = tools[-1].get("name")  # the model must call a tool: the last offered
        for tool in tools:
            if name is not None and tool.get("name") == name:
                call.json_mode, call.tool_name = True, str(name)
                schema = tool.get("inputSchema")
                call.schema = schema.get("json") if isinstance(schema, Mapping) else None
        return call

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        config = body.get("toolConfig")
        tools = config.get("tools") if isinstance(config, Mapping) else None
        specs = [t.get("toolSpec") for t in tools or [] if isinstance(t, Mapping)]
        return [str(s.get("name")) for s in specs if isinstance(s, Mapping)]

    def _tool_input(self, text: str) -> dict[str, Any]:
        try:
            value = json.loads(text)
        except ValueError:
            return {"text": text}
        return value if isinstance(value, dict) else {"text": text}

    def _content(self, call: Call, text: str) -> tuple[list[dict[str, Any]], str]:
        if call.tool_calls:
            blocks = [{"text": text}] if text else []
            blocks += [self._tool_use(call, i, c, c.value()) for i, c in enumerate(call.tool_calls)]
            return blocks, "tool_use"
        if call.tool_name is not None:
            use = {"toolUseId": f"tooluse_sim{call.seq}", "name": call.tool_name}
            return [{"toolUse": {**use, "input": self._tool_input(text)}}], "tool_use"
        return [{"text": text}], "end_turn"

    def _tool_use(self, call: Call, i: int, c: ScriptedCall, arguments: Any) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": f"tooluse_sim{call.seq}_{i}", "name": c.name,
                            "input": arguments}}  # fmt: skip

    def _reply(self, content: list[Any] | None, stop: str, usage: Tokens) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if content is not None:
            out["output"] = {"message": {"role": "assistant", "content": content}}
        out["stopReason"] = stop
        out["usage"] = _usage(usage)
        out["metrics"] = {"latencyMs": 1}
        return out

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        content, stop = self._content(call, text)
        return self._reply(content, stop, usage)

    def _tool_stream(self, call: Call, pieces: list[str], terminate: bool) -> list[bytes]:
        """Text (if any), then one ``toolUse`` block per call (the forced tool's, for
        structured output), its input JSON in two deltas; cut after half the first."""
        events, index = [], 0
        if call.tool_calls and any(pieces):
            events += [_delta(0, {"text": p}) for p in pieces if p]
            events.append(event("contentBlockStop", {"contentBlockIndex": 0}))
            index = 1
        calls = [(c.name, c.text()) for c in call.tool_calls] or [
            (str(call.tool_name), dumps(self._tool_input("".join(pieces))))
        ]
        for i, (name, text) in enumerate(calls):
            halves = [text[: len(text) // 2], text[len(text) // 2 :]][: 2 if terminate else 1]
            use = {"toolUseId": f"tooluse_sim{call.seq}_{i}", "name": name}
            events.append(
                event("contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": use}})
            )
            events += [_delta(index, {"toolUse": {"input": h}}) for h in halves]
            if not terminate:
                return events
            events.append(event("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        return events

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        events = [event("messageStart", {"role": "assistant"})]
        stop = "end_turn"
        if call.tool_calls or call.tool_name is not None:
            events += self._tool_stream(call, pieces, terminate)
            stop = "tool_use"
        else:
            events += [_delta(0, {"text": p}) for p in pieces]
            if terminate:
                events.append(event("contentBlockStop", {"contentBlockIndex": 0}))
        return events + (_end(stop, usage) if terminate else [])

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        message = error_type(kind, status)[1]
        return {"message": message.format(model=call.model)}

    def error_headers(self, kind: str, status: int) -> dict[str, str]:
        return error_headers(kind, status)

    def stream_error(self, kind: str, status: int, call: Call) -> bytes:
        etype, message = error_type(kind, status)
        return exception(etype, message)

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        text = "Sorry, the model cannot answer this question."
        return self._reply([{"text": text}], "guardrail_intervened", Tokens(1, 0))

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        head = event("messageStart", {"role": "assistant"})
        return [head, _delta(0, {"text": "Sorry."}), *_end("guardrail_intervened", Tokens(1, 0))]

    def missing(self, call: Call) -> dict[str, Any]:
        return self._reply(None, "end_turn", Tokens(1, 1))

    def missing_stream(self, call: Call) -> list[bytes]:
        head = [event("messageStart", {"role": "assistant"})]
        return [
            *head,
            event("contentBlockDelta", {"contentBlockIndex": 0}),
            *_end("end_turn", Tokens(1, 1)),
        ]

    def broken_event(self) -> bytes:
        headers = {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return frame(headers, b'{"contentBlockIndex":0,"delta":{')


def _usage(usage: Tokens) -> dict[str, int]:
    out = {"inputTokens": usage.uncached, "outputTokens": usage.output}
    out["totalTokens"] = usage.input + usage.output
    if usage.cache_read or usage.cache_write:
        out["cacheReadInputTokens"] = usage.cache_read
        out["cacheWriteInputTokens"] = usage.cache_write
    return out


def _delta(index: int, delta: Mapping[str, Any]) -> bytes:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": dict(delta)})


def _end(stop: str, usage: Tokens) -> list[bytes]:
    metadata = {"usage": _usage(usage), "metrics": {"latencyMs": 1}}
    return [event("messageStop", {"stopReason": stop}), event("metadata", metadata)]
