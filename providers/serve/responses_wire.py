"""The OpenAI Responses API on the wire: ``POST /v1/responses`` in, JSON or semantic SSE out.

What the Codex CLI speaks (it no longer speaks chat completions). Accepts
``input`` as a string or items: ``message`` (``input_text``/``output_text``
parts; ``developer``/``system`` messages and ``instructions`` join into
``Request.system``), ``function_call`` (becomes the assistant's tool calls),
``function_call_output`` (a ``tool`` message) and ``reasoning`` (dropped:
another vendor cannot read it); ``tools`` of type ``function`` (others, such as
``web_search`` or ``namespace``, are dropped), ``tool_choice``,
``max_output_tokens``, ``temperature``, ``stream``. Stateless: no
``previous_response_id`` (400), nothing stored.
"""

from __future__ import annotations

import time
from typing import Any

from orchestrator.types import Message, Result, Tool, ToolCall
from providers.serve import fields
from providers.serve.call import ClientCall, dumps, new_id, usage_of
from providers.serve.failures import BadRequest, Failure
from providers.serve.openai_wire import OpenAIWire

__all__ = ["ResponsesWire"]

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


class _History:
    """Input items folded into messages: consecutive function calls join one assistant turn."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.system: list[str] = []
        self._calls: list[ToolCall] = []
        self._said = ""

    def flush(self) -> None:
        if self._calls or self._said:
            self.messages.append(Message("assistant", self._said, tool_calls=tuple(self._calls)))
        self._calls, self._said = [], ""

    def add(self, item: dict[str, Any], where: str) -> None:
        kind = item.get("type", "message")
        if kind == "message":
            role = fields.require(item, "role", str, f"{where}.")
            text = fields.text(item.get("content", ""), where, _TEXT_PARTS)
            if role in ("system", "developer"):
                self.system.append(text)
            elif role == "assistant":
                self.flush()
                self._said = text
            elif role == "user":
                self.flush()
                self.messages.append(Message("user", text))
            else:
                raise BadRequest(f"{where}.role: {role!r} is not user, assistant or developer")
        elif kind == "function_call":
            args = fields.arguments(item.get("arguments", ""), f"{where}.arguments")
            call_id = fields.require(item, "call_id", str, f"{where}.")
            name = fields.require(item, "name", str, f"{where}.")
            self._calls.append(fields.tool_call(call_id, name, args, where))
        elif kind == "function_call_output":
            self.flush()
            call_id = fields.require(item, "call_id", str, f"{where}.")
            output = item.get("output", "")
            text = fields.text(output, where, _TEXT_PARTS)
            self.messages.append(Message("tool", text, tool_call_id=call_id))
        elif kind != "reasoning":
            raise BadRequest(f"{where}.type: {kind!r} input items are not supported")


def _history(data: dict[str, Any]) -> _History:
    history = _History()
    instructions = fields.optional(data, "instructions", str, "")
    if instructions:
        history.system.append(instructions)
    raw = fields.require(data, "input", (str, list), "")
    items = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else raw
    for at, item in fields.objects(items, "input"):
        history.add(item, at)
    history.flush()
    return history


def _tools(data: dict[str, Any]) -> tuple[list[Tool], str | None]:
    tools = []
    for i, item in enumerate(fields.optional(data, "tools", list, "") or []):
        if isinstance(item, dict) and item.get("type") == "function":
            tools.append(
                fields.tool(
                    item.get("name"), item.get("description"), item.get("parameters"), f"tools[{i}]"
                )
            )
    choice = data.get("tool_choice")
    if isinstance(choice, dict):
        choice = fields.require(choice, "name", str, "tool_choice.")
    elif choice is not None and not isinstance(choice, str):
        raise BadRequest("tool_choice: expected a string or {'type': 'function', 'name': ...}")
    return tools, choice if tools else None


class ResponsesWire:
    """The OpenAI Responses format (see the module docstring)."""

    def parse(self, data: dict[str, Any]) -> ClientCall:
        model = fields.require(data, "model", str, "")
        if data.get("previous_response_id") is not None:
            raise BadRequest("previous_response_id: the gateway stores nothing; send the input")
        history = _history(data)
        tools, choice = _tools(data)
        request = fields.request(
            messages=history.messages,
            system="\n\n".join(history.system) if history.system else None,
            max_tokens=fields.positive_int(data, "max_output_tokens"),
            temperature=fields.temperature(data),
            tools=tools,
            tool_choice=choice,
        )
        key = fields.affinity(data.get("prompt_cache_key"), data.get("user"))
        stream = bool(fields.optional(data, "stream", bool, ""))
        return ClientCall(model, request, stream=stream, affinity=key)

    def reply(self, call: ClientCall, result: Result) -> dict[str, Any]:
        model = call.answering(result.model)
        return _response(model, new_id("resp_"), "completed", _output(result), result)

    def error(self, failure: Failure) -> tuple[int, dict[str, Any]]:
        if failure.kind == "content_filter":
            body = _response("failover", new_id("resp_"), "incomplete", [], None)
            body["incomplete_details"] = {"reason": "content_filter"}
            return 200, body
        return OpenAIWire().error(failure)

    def streamer(self, call: ClientCall) -> ResponsesStreamer:
        return ResponsesStreamer(call)


def _message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [_part(text)]
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _function_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": "fc_" + call.id,
        "type": "function_call",
        "status": "completed",
        "call_id": call.id,
        "name": call.name,
        "arguments": dumps(dict(call.arguments)),
    }


def _output(result: Result, item_id: str | None = None) -> list[dict[str, Any]]:
    output = []
    if result.text or not result.tool_calls:
        output.append(_message(item_id or new_id("msg_"), result.text, "completed"))
    output += [_function_call(c) for c in result.tool_calls]
    return output


def _response(
    model: str, rid: str, status: str, output: list[Any], result: Result | None
) -> dict[str, Any]:
    usage = None
    if result is not None:
        counts = usage_of(result)
        usage = {
            "input_tokens": counts.input_tokens,
            "output_tokens": counts.output_tokens,
            "total_tokens": counts.total_tokens,
        }
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "usage": usage,
    }


class ResponsesStreamer:
    """``response.created``, a message item of text deltas, function_call items, then
    ``response.completed`` (the terminator; there is no ``[DONE]``)."""

    # An SSE comment, as for chat completions: every event of this format is numbered, and a
    # comment is none (SSE parsers skip it: the spec's, openai-python's, the JS SDK's).
    keep_alive = b": keep-alive\n\n"

    def __init__(self, call: ClientCall) -> None:
        self._model = call.model
        self._id = new_id("resp_")
        self._item = new_id("msg_")
        self._seq = 0
        self._text: list[str] = []
        self._opened = False

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        self._seq += 1
        payload = {"type": kind, "sequence_number": self._seq, **data}
        return f"event: {kind}\ndata: {dumps(payload)}\n\n".encode()

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._item, "output_index": 0, "content_index": 0}

    def start(self) -> bytes:
        pending = _response(self._model, self._id, "in_progress", [], None)
        return self._event("response.created", {"response": pending}) + self._event(
            "response.in_progress", {"response": pending}
        )

    def _open(self) -> bytes:
        self._opened = True
        item = _message(self._item, None, "in_progress")
        return self._event(
            "response.output_item.added", {"output_index": 0, "item": item}
        ) + self._event("response.content_part.added", {**self._where(), "part": _part("")})

    def text(self, chunk: str) -> bytes:
        head = b"" if self._opened else self._open()
        self._text.append(chunk)
        return head + self._event("response.output_text.delta", {**self._where(), "delta": chunk})

    def end(self, result: Result) -> bytes:
        out = []
        if not self._opened and (result.text or not result.tool_calls):
            out.append(self._open())
        if self._opened:
            text = "".join(self._text)
            out.append(self._event("response.output_text.done", {**self._where(), "text": text}))
            out.append(
                self._event("response.content_part.done", {**self._where(), "part": _part(text)})
            )
            item = _message(self._item, text, "completed")
            out.append(self._event("response.output_item.done", {"output_index": 0, "item": item}))
        first = 1 if self._opened else 0
        for index, call in enumerate(result.tool_calls, first):
            item = _function_call(call)
            out.append(
                self._event("response.output_item.added", {"output_index": index, "item": item})
            )
            out.append(
                self._event("response.output_item.done", {"output_index": index, "item": item})
            )
        final = _response(self._model, self._id, "completed", _output(result, self._item), result)
        out.append(self._event("response.completed", {"response": final}))
        return b"".join(out)

    def error(self, failure: Failure) -> bytes:
        failed = _response(self._model, self._id, "failed", [], None)
        failed["error"] = {"code": failure.kind, "message": failure.message}
        return self._event("response.failed", {"response": failed})
