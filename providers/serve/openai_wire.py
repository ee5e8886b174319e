"""OpenAI chat completions on the wire: ``POST /v1/chat/completions`` in, JSON or SSE out.

Accepts what the official SDKs and tools send: text or text-part content,
``system``/``developer`` messages (joined into ``Request.system``), assistant
``tool_calls`` and ``tool`` messages, ``tools``/``tool_choice``, ``max_tokens`` or
``max_completion_tokens``, ``stop``, ``temperature``, ``stream`` and
``stream_options.include_usage``. Other fields (``user``, ``top_p``, ...) are
ignored; images and audio are refused with 400.
"""

from __future__ import annotations

import time
from typing import Any

from orchestrator.types import Message, Result, ToolCall
from providers.serve import fields
from providers.serve.call import ClientCall, dumps, new_id, usage_of
from providers.serve.failures import BadRequest, Failure

__all__ = ["OpenAIWire"]

_ERROR_TYPES = {
    "invalid_request": "invalid_request_error",
    "context_window": "invalid_request_error",
    "content_filter": "invalid_request_error",
    "authentication": "authentication_error",
    "not_found": "invalid_request_error",
    "too_large": "invalid_request_error",
    "rate_limited": "rate_limit_error",
    "insufficient_quota": "insufficient_quota",  # OpenAI's 429 for a spent quota
    "overloaded": "server_error",
    "unavailable": "server_error",
    "internal": "server_error",
}
_ERROR_CODES = {
    "context_window": "context_length_exceeded",
    "content_filter": "content_filter",
    "not_found": "model_not_found",
    "rate_limited": "rate_limit_exceeded",
    "insufficient_quota": "insufficient_quota",
    "authentication": "invalid_api_key",
}


#: The fields besides ``model`` and ``messages`` that :meth:`OpenAIWire.parse` reads.
_OPTIONS = frozenset(
    {"n", "tools", "tool_choice", "max_completion_tokens", "max_tokens", "stream_options"}
    | {"temperature", "stop", "stream", "prompt_cache_key", "user"}
)


def _tool_calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadRequest(f"{where}.tool_calls: expected a list")
    calls = []
    for at, item in fields.objects(raw, f"{where}.tool_calls"):
        fn = fields.require(item, "function", dict, f"{at}.")
        call_id = fields.require(item, "id", str, f"{at}.")
        name = fields.require(fn, "name", str, f"{at}.function.")
        args = fields.arguments(fn.get("arguments", ""), f"{at}.function.arguments")
        calls.append(fields.tool_call(call_id, name, args, at))
    return tuple(calls)


def _messages(raw: list[Any]) -> tuple[list[Message], str | None]:
    messages: list[Message] = []
    system: list[str] = []
    for where, item in fields.objects(raw, "messages"):
        role = fields.require(item, "role", str, f"{where}.")
        content = fields.text(item.get("content"), where)
        if role in ("system", "developer"):
            system.append(content)
            continue
        try:
            if role == "assistant":
                calls = _tool_calls(item.get("tool_calls"), where)
                messages.append(Message("assistant", content, tool_calls=calls))
            elif role == "tool":
                call_id = fields.require(item, "tool_call_id", str, f"{where}.")
                messages.append(Message("tool", content, tool_call_id=call_id))
            else:
                messages.append(Message(role, content))
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"{where}: {exc}") from None
    return messages, "\n\n".join(system) if system else None


def _tools(data: dict[str, Any]) -> tuple[list[Any], str | None]:
    raw = fields.optional(data, "tools", list, "") or []
    tools = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(item, dict) or item.get("type", "function") != "function":
            raise BadRequest(f"{where}: only function tools are supported")
        fn = fields.require(item, "function", dict, f"{where}.")
        tools.append(
            fields.tool(fn.get("name"), fn.get("description"), fn.get("parameters"), where)
        )
    choice = data.get("tool_choice")
    if isinstance(choice, dict):
        fn = fields.require(choice, "function", dict, "tool_choice.")
        choice = fields.require(fn, "name", str, "tool_choice.function.")
    elif choice is not None and not isinstance(choice, str):
        raise BadRequest("tool_choice: expected a string or {'type': 'function', ...}")
    if not tools:
        choice = None  # "none"/"auto" without tools is harmless; the core refuses it
    return tools, choice


class OpenAIWire:
    """The OpenAI chat completions format (see the module docstring)."""

    def parse(self, data: dict[str, Any]) -> ClientCall:
        model = fields.require(data, "model", str, "")
        raw = fields.require(data, "messages", list, "")
        if data.keys().isdisjoint(_OPTIONS):  # most calls: none to check, the defaults hold
            messages, system = _messages(raw)
            return ClientCall(model, fields.request(messages=messages, system=system))
        if fields.optional(data, "n", int, "") not in (None, 1):
            raise BadRequest("n: only n=1 is supported")
        messages, system = _messages(raw)
        no_tools: tuple[list[Any], None] = ([], None)  # most calls carry neither field
        tools, choice = _tools(data) if "tools" in data or "tool_choice" in data else no_tools
        max_tokens = fields.positive_int(data, "max_completion_tokens")
        if max_tokens is None:
            max_tokens = fields.positive_int(data, "max_tokens")
        options = fields.optional(data, "stream_options", dict, "") or {}
        request = fields.request(
            messages=messages,
            system=system,
            max_tokens=max_tokens,
            temperature=fields.temperature(data),
            stop=fields.stop_sequences(data.get("stop"), "stop"),
            tools=tools,
            tool_choice=choice,
        )
        return ClientCall(
            model,
            request,
            stream=bool(fields.optional(data, "stream", bool, "")),
            include_usage=bool(options.get("include_usage")),
            affinity=fields.affinity(data.get("prompt_cache_key"), data.get("user")),
        )

    def reply(self, call: ClientCall, result: Result) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
        if result.tool_calls:
            message["tool_calls"] = [_call(c) for c in result.tool_calls]
        return {
            "id": new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": call.answering(result.model),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(result)}
            ],
            "usage": _usage(result),
        }

    def error(self, failure: Failure) -> tuple[int, dict[str, Any]]:
        body = {
            "message": failure.message,
            "type": _ERROR_TYPES.get(failure.kind, "server_error"),
            "param": None,
            "code": _ERROR_CODES.get(failure.kind),
        }
        return failure.status, {"error": body}

    def streamer(self, call: ClientCall) -> OpenAIStreamer:
        return OpenAIStreamer(call)


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dumps(dict(call.arguments))},
    }


def _finish(result: Result) -> str:
    return "tool_calls" if result.tool_calls else "stop"


def _usage(result: Result) -> dict[str, int]:
    usage = usage_of(result)
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


class OpenAIStreamer:
    """``chat.completion.chunk`` events, then ``data: [DONE]``."""

    keep_alive = b": keep-alive\n\n"  # an SSE comment: every client's parser skips it

    def __init__(self, call: ClientCall) -> None:
        self._call = call
        self._head = (
            f'{{"id":"{new_id("chatcmpl-")}","object":"chat.completion.chunk",'
            f'"created":{int(time.time())},"model":{dumps(call.model)},'
        )

    def _event(self, choices: str, extra: str = "") -> bytes:
        return f'data: {self._head}"choices":{choices}{extra}}}\n\n'.encode()

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return self._event(f"[{dumps(choice)}]")

    def start(self) -> bytes:
        return self._delta({"role": "assistant", "content": ""})

    def text(self, chunk: str) -> bytes:
        return self._delta({"content": chunk})

    def end(self, result: Result) -> bytes:
        out = []
        if result.tool_calls:
            calls = [{"index": i, **_call(c)} for i, c in enumerate(result.tool_calls)]
            out.append(self._delta({"tool_calls": calls}))
        out.append(self._delta({}, _finish(result)))
        if self._call.include_usage:
            out.append(self._event("[]", f',"usage":{dumps(_usage(result))}'))
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)

    def error(self, failure: Failure) -> bytes:
        _, body = OpenAIWire().error(failure)
        return f"data: {dumps(body)}\n\n".encode()
