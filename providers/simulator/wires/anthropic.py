"""The Anthropic Messages wire format, as the simulated server speaks it.

JSON: ``message`` objects with ``text`` or (forced tool, or ``tool_choice``
``any``: the last tool offered; or scripted tool calls) ``tool_use`` blocks;
SSE: ``message_start``, ``content_block_start``, ``ping``, ``content_block_delta``,
``content_block_stop``, ``message_delta`` (stop_reason, usage), ``message_stop``.
Errors: ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
The prompt behind the default reply text is the last text block of the last
user message (the claude CLI sends ``<system-reminder>`` blocks before it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import (
    Call,
    ScriptedCall,
    Tokens,
    Wire,
    dumps,
    last_text_block,
    split_text,
)

__all__ = ["NO_PREFILL", "AnthropicWire"]

#: Claude 4.6 and later, given a request ending in an assistant message (a prefill).
NO_PREFILL = (
    "This model does not support assistant message prefill. "
    "The conversation must end with a user message."
)

_ERRORS: dict[str, tuple[str, str]] = {
    "rate_limited": (
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit "
        "(https://docs.anthropic.com/en/api/rate-limits); see the response headers for "
        "current usage. Please reduce the prompt length or the maximum tokens requested, "
        "or try again later.",
    ),
    "quota": (
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to "
        "Plans & Billing to upgrade or purchase credits.",
    ),
    "overloaded": ("overloaded_error", "Overloaded"),
    "server_error": ("api_error", "Internal server error"),
    "auth": ("authentication_error", "invalid x-api-key"),
    "forbidden": (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    "model_not_found": ("not_found_error", "model: {model}"),
    "bad_request": ("invalid_request_error", "max_tokens: Field required"),
    "no_prefill": ("invalid_request_error", NO_PREFILL),
    "context_too_long": (
        "invalid_request_error",
        "prompt is too long: 210000 tokens > 200000 maximum",
    ),
    "too_large": ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
}


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {dumps(data)}\n\n".encode()


class AnthropicWire(Wire):
    """Messages (``POST /anthropic/v1/messages``)."""

    route = "anthropic"
    default_model = "claude-sim"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        prompt = ""
        for m in reversed(body.get("messages") or []):
            if isinstance(m, Mapping) and m.get("role") == "user":
                # The last text block: the claude CLI puts <system-reminder> blocks first.
                prompt = last_text_block(m.get("content"))
                break
        call = self.json_call(body, seq, prompt)
        choice = body.get("tool_choice") or {}
        tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
        if isinstance(choice, Mapping) and choice.get("type") == "any" and tools:
            # The model must call a tool, any: the simulated one calls the last offered.
            choice = {"type": "tool", "name": tools[-1].get("name")}
        if isinstance(choice, Mapping) and choice.get("type") == "tool":
            call.json_mode = True
            call.tool_name = str(choice.get("name", "tool"))
            for tool in body.get("tools") or []:
                if isinstance(tool, Mapping) and tool.get("name") == call.tool_name:
                    call.schema = tool.get("input_schema")
        fmt = body.get("output_format") or {}
        if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
            call.json_mode = True
            call.schema = fmt.get("schema")
        return call

    def _message(
        self,
        call: Call,
        content: list[dict[str, Any]] | None,
        stop: str | None,
        usage: Tokens,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"msg_sim{call.seq}",
            "type": "message",
            "role": "assistant",
            "model": call.model,
        }
        if content is not None:
            out["content"] = content
        out["stop_reason"] = stop
        out["stop_sequence"] = None
        out["usage"] = {
            "input_tokens": usage.uncached,
            "output_tokens": usage.output,
            "cache_creation_input_tokens": usage.cache_write,
            "cache_read_input_tokens": usage.cache_read,
        }
        return out

    def _tool_input(self, text: str) -> dict[str, Any]:
        """The forced tool's ``input``: the text parsed as a JSON object, or
        ``{"text": text}`` when it is not one (so a bad reply fails the schema)."""
        try:
            value = json.loads(text)
        except ValueError:
            return {"text": text}
        return value if isinstance(value, dict) else {"text": text}

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, Mapping)]

    def _tool_use(self, call: Call, i: int, c: ScriptedCall, streamed: bool) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_sim{call.seq}_{i}",
            "name": c.name,
            "input": {} if streamed else c.value(),
        }

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        if call.tool_calls:
            content = [{"type": "text", "text": text}] if text else []
            content += [self._tool_use(call, i, c, False) for i, c in enumerate(call.tool_calls)]
            return self._message(call, content, "tool_use", usage)
        if call.tool_name is not None:
            block = {
                "type": "tool_use",
                "id": f"toolu_sim{call.seq}",
                "name": call.tool_name,
                "input": self._tool_input(text),
            }
            return self._message(call, [block], "tool_use", usage)
        return self._message(call, [{"type": "text", "text": text}], "end_turn", usage)

    def _start(self, call: Call, usage: Tokens) -> list[bytes]:
        message = self._message(call, [], None, usage._replace(output=1))
        return [_event("message_start", {"type": "message_start", "message": message})]

    def _end(self, stop: str, output_tokens: int) -> list[bytes]:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
        return [_event("message_delta", delta), _event("message_stop", {"type": "message_stop"})]

    def _block(
        self, index: int, block: Mapping[str, Any], deltas: list[dict[str, Any]]
    ) -> list[bytes]:
        """One content block's start and deltas (its stop is the caller's)."""
        start = {"type": "content_block_start", "index": index, "content_block": block}
        events = [_event("content_block_start", start)]
        for delta in deltas:
            body = {"type": "content_block_delta", "index": index, "delta": delta}
            events.append(_event("content_block_delta", body))
        return events

    def _tool_stream(self, call: Call, pieces: list[str], terminate: bool) -> list[bytes]:
        """Text (if any) then one ``tool_use`` block per call, its input JSON in two
        ``input_json_delta`` pieces; cut (not ``terminate``) after half the first call."""
        events: list[bytes] = []
        index = 0
        if any(pieces):
            deltas = [{"type": "text_delta", "text": p} for p in pieces if p]
            events += self._block(0, {"type": "text", "text": ""}, deltas)
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        for i, c in enumerate(call.tool_calls):
            text = c.text()
            halves = [text[: len(text) // 2], text[len(text) // 2 :]][: 2 if terminate else 1]
            deltas = [{"type": "input_json_delta", "partial_json": h} for h in halves]
            events += self._block(index, self._tool_use(call, i, c, True), deltas)
            if not terminate:
                return events
            stop = {"type": "content_block_stop", "index": index}
            events.append(_event("content_block_stop", stop))
            index += 1
        return events

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        events = self._start(call, usage)
        if call.tool_calls:
            events += self._tool_stream(call, pieces, terminate)
            return events + (self._end("tool_use", usage[1]) if terminate else [])
        if call.tool_name is not None:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_sim{call.seq}",
                "name": call.tool_name,
                "input": {},
            }
            # The JSON the deltas carry must parse to the same input as a JSON reply.
            whole = dumps(self._tool_input("".join(pieces)))
            if terminate:
                pieces = split_text(whole, len(pieces))
            delta_kind, key = "input_json_delta", "partial_json"
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta_kind, key = "text_delta", "text"
            stop = "end_turn"
        events.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
        )
        events.append(_event("ping", {"type": "ping"}))
        for piece in pieces:
            delta = {"type": delta_kind, key: piece}
            events.append(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                )
            )
        if terminate:
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
            events += self._end(stop, usage[1])
        return events

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        if kind == "auth" and status == 403:
            kind = "forbidden"
        elif kind == "status" and status == 413:
            kind = "too_large"
        elif kind in ("server_error", "status") and status == 529:
            kind = "overloaded"
        etype, message = _ERRORS.get(kind, _ERRORS["server_error"])
        return {
            "type": "error",
            "error": {"type": etype, "message": message.format(model=call.model)},
            "request_id": f"req_sim{call.seq}",
        }

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        return self._message(call, [], "refusal", Tokens(1, 0))

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        return self._start(call, Tokens(1, 0)) + self._end("refusal", 0)

    def missing(self, call: Call) -> dict[str, Any]:
        return self._message(call, None, "end_turn", Tokens(1, 1))

    def missing_stream(self, call: Call) -> list[bytes]:
        events = self._start(call, Tokens(1, 1))
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
        events.append(_event("content_block_start", block))
        events.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0}))
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        return events + self._end("end_turn", 1)

    def broken_event(self) -> bytes:
        return (
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{\n\n'
        )
