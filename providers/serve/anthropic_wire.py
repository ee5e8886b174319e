"""Anthropic messages on the wire: ``POST /v1/messages`` in, JSON or SSE events out.

Accepts what the official SDK and Claude Code send: ``system`` as a string or
text blocks, text / ``tool_use`` / ``tool_result`` blocks (a user message's
tool results become ``tool`` messages), ``thinking`` blocks (dropped: another
vendor cannot verify their signatures), ``tools`` with ``input_schema`` (server
tools without one, such as web search, are dropped), ``tool_choice``,
``max_tokens`` (required, as Anthropic requires it), ``stop_sequences``,
``temperature``, ``stream``. ``cache_control``, ``metadata`` and other fields are
ignored; images and documents are refused with 400.
"""

from __future__ import annotations

from typing import Any

from orchestrator.types import Message, Request, Result, ToolCall
from providers.serve import fields
from providers.serve.call import ClientCall, dumps, new_id, usage_of
from providers.serve.failures import BadRequest, Failure

__all__ = ["AnthropicWire", "parse_request"]

_ERROR_TYPES = {
    "invalid_request": "invalid_request_error",
    "context_window": "invalid_request_error",
    "authentication": "authentication_error",
    "not_found": "not_found_error",
    "too_large": "request_too_large",
    "rate_limited": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",  # Anthropic has no 429 of its own for spend
    "overloaded": "overloaded_error",
    "unavailable": "overloaded_error",
    "internal": "api_error",
}
_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content: expected a string or a list of blocks")
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise BadRequest(f"{where}.content[{i}]: expected a block with a 'type'")
    return content


def _plain(content: Any, where: str) -> str:
    """Text of a string or of text blocks (tool results, system)."""
    return fields.text(content, where)


def _message(role: str, blocks: list[dict[str, Any]], where: str) -> list[Message]:
    """One client message as core messages (tool results first, as the client ordered them)."""
    out: list[Message] = []
    text: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(blocks):
        at = f"{where}.content[{i}]"
        kind = block["type"]
        if kind == "text":
            text.append(fields.require(block, "text", str, f"{at}."))
        elif kind == "tool_use" and role == "assistant":
            call_id = fields.require(block, "id", str, f"{at}.")
            name = fields.require(block, "name", str, f"{at}.")
            args = fields.optional(block, "input", dict, f"{at}.") or {}
            calls.append(fields.tool_call(call_id, name, args, at))
        elif kind == "tool_result" and role == "user":
            call_id = fields.require(block, "tool_use_id", str, f"{at}.")
            result = _plain(block.get("content"), at)
            out.append(Message("tool", result, tool_call_id=call_id))
        elif kind not in _DROPPED_BLOCKS:
            raise BadRequest(f"{at}: {kind!r} blocks are not supported in a {role} message")
    if text or calls or not out:
        out.append(Message(role, "".join(text), tool_calls=tuple(calls)))
    return out


def _messages(raw: list[Any]) -> list[Message]:
    out: list[Message] = []
    for where, item in fields.objects(raw, "messages"):
        role = fields.require(item, "role", str, f"{where}.")
        if role == "system":  # Claude Code sends mid-conversation system messages
            out.append(Message("system", _plain(item.get("content"), where)))
            continue
        if role not in ("user", "assistant"):
            raise BadRequest(f"{where}.role: expected user, assistant or system, got {role!r}")
        out += _message(role, _blocks(item.get("content", ""), where), where)
    return out


def _tools(data: dict[str, Any]) -> tuple[list[Any], str | None]:
    tools = []
    for at, item in fields.objects(fields.optional(data, "tools", list, "") or [], "tools"):
        if "input_schema" not in item:
            continue  # a server tool (web search, ...): only its vendor can run it
        schema = item["input_schema"]
        tools.append(fields.tool(item.get("name"), item.get("description"), schema, at))
    choice = fields.optional(data, "tool_choice", dict, "")
    if not tools or choice is None:
        return tools, None
    kind = choice.get("type")
    if kind == "tool":
        return tools, fields.require(choice, "name", str, "tool_choice.")
    named = {"auto": "auto", "any": "required", "none": "none"}
    if kind not in named:
        raise BadRequest(f"tool_choice.type: expected auto, any, tool or none, got {kind!r}")
    return tools, named[kind]


def parse_request(data: dict[str, Any], *, need_max_tokens: bool = True) -> tuple[str, Request]:
    """The model name and :class:`Request` of a messages (or count_tokens) body."""
    model = fields.require(data, "model", str, "")
    raw = fields.require(data, "messages", list, "")
    max_tokens = fields.positive_int(data, "max_tokens")
    if max_tokens is None and need_max_tokens:
        raise BadRequest("max_tokens: required")
    system = data.get("system")
    tools, choice = _tools(data)
    request = fields.request(
        messages=_messages(raw),
        system=None if system is None else _plain(system, "system"),
        max_tokens=max_tokens,
        temperature=fields.temperature(data),
        stop=fields.stop_sequences(data.get("stop_sequences"), "stop_sequences"),
        tools=tools,
        tool_choice=choice,
    )
    return model, request


def _content(result: Result) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if result.text or not result.tool_calls:
        blocks.append({"type": "text", "text": result.text})
    for c in result.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)})
    return blocks


def _stop(result: Result) -> str:
    return "tool_use" if result.tool_calls else "end_turn"


def _message_body(model: str, content: list[Any], stop: str | None, usage: Any) -> dict[str, Any]:
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


class AnthropicWire:
    """The Anthropic messages format (see the module docstring)."""

    def parse(self, data: dict[str, Any]) -> ClientCall:
        model, request = parse_request(data)
        meta = data.get("metadata")
        key = fields.affinity(meta.get("user_id")) if isinstance(meta, dict) else None
        stream = bool(fields.optional(data, "stream", bool, ""))
        return ClientCall(model, request, stream=stream, affinity=key)

    def reply(self, call: ClientCall, result: Result) -> dict[str, Any]:
        usage = usage_of(result)
        counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        return _message_body(call.answering(result.model), _content(result), _stop(result), counts)

    def error(self, failure: Failure) -> tuple[int, dict[str, Any]]:
        if failure.kind == "content_filter":
            # Anthropic's own shape for a refusal: a message that stops with "refusal".
            counts = {"input_tokens": 0, "output_tokens": 0}
            return 200, _message_body("failover", [], "refusal", counts)
        kind = _ERROR_TYPES.get(failure.kind, "api_error")
        return failure.status, {
            "type": "error",
            "error": {"type": kind, "message": failure.message},
        }

    def streamer(self, call: ClientCall) -> AnthropicStreamer:
        return AnthropicStreamer(call)


def _at(index: int, kind: str) -> dict[str, Any]:
    return {"type": kind, "index": index}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {dumps(data)}\n\n".encode()


class AnthropicStreamer:
    """``message_start``, a text block of deltas, tool_use blocks, then ``message_delta``
    and ``message_stop``."""

    keep_alive = b'event: ping\ndata: {"type":"ping"}\n\n'  # what Anthropic's API sends

    def __init__(self, call: ClientCall) -> None:
        self._call = call
        self._blocks = 0  # blocks opened so far

    def start(self) -> bytes:
        counts = {"input_tokens": 0, "output_tokens": 0}
        message = _message_body(self._call.model, [], None, counts)
        return _event("message_start", {"type": "message_start", "message": message})

    def _open_text(self) -> bytes:
        self._blocks = 1
        block = {"type": "text", "text": ""}
        return _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )

    def text(self, chunk: str) -> bytes:
        head = self._open_text() if self._blocks == 0 else b""
        delta = {"type": "text_delta", "text": chunk}
        return head + _event(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )

    def end(self, result: Result) -> bytes:
        out = []
        if self._blocks == 0 and not result.tool_calls:
            out.append(self._open_text())
        if self._blocks:
            out.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        for c in result.tool_calls:
            out += self._tool_use(c)
        usage = usage_of(result)
        delta = {"stop_reason": _stop(result), "stop_sequence": None}
        counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        out.append(
            _event("message_delta", {"type": "message_delta", "delta": delta, "usage": counts})
        )
        out.append(_event("message_stop", {"type": "message_stop"}))
        return b"".join(out)

    def _tool_use(self, call: ToolCall) -> list[bytes]:
        index = self._blocks
        self._blocks += 1
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": dumps(dict(call.arguments))}
        return [
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            ),
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            _event("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]

    def error(self, failure: Failure) -> bytes:
        _, body = AnthropicWire().error(failure)
        if body.get("type") == "error":
            return _event("error", body)
        # A refusal ends the message as Anthropic ends one: stop_reason "refusal".
        out = []
        if self._blocks:
            out.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        delta = {"stop_reason": "refusal", "stop_sequence": None}
        counts = {"input_tokens": 0, "output_tokens": 0}
        out.append(
            _event("message_delta", {"type": "message_delta", "delta": delta, "usage": counts})
        )
        out.append(_event("message_stop", {"type": "message_stop"}))
        return b"".join(out)
