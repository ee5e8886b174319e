"""The OpenAI Responses API wire format, as the simulated server speaks it.

``POST /openai/v1/responses`` (route ``responses``): JSON replies are
``response`` objects whose ``output`` holds one assistant ``message`` item with
one ``output_text`` part; ``"stream": true`` sends semantic SSE events, each
``event: <type>`` plus ``data: {"type", "sequence_number", ...}``:
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` (one per
chunk), ``response.output_text.done``, ``response.content_part.done``,
``response.output_item.done``, ``response.completed`` (the terminator; there
is no ``[DONE]``). A refused reply is an ``incomplete`` response with
``incomplete_details.reason: "content_filter"`` (streamed, it ends with
``response.incomplete``). Errors use the OpenAI body
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, Tokens, Wire, dumps, last_text_block
from providers.simulator.wires.openai import OpenAIWire

__all__ = ["ResponsesWire"]

_CHAT = OpenAIWire()
_CONTEXT_MESSAGE = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)


def _event(seq: int, kind: str, data: dict[str, Any]) -> bytes:
    payload = {"type": kind, "sequence_number": seq, **data}
    return f"event: {kind}\ndata: {dumps(payload)}\n\n".encode()


def _prompt(body: Mapping[str, Any]) -> str:
    """The last text block of the last user message in ``input`` (a string or items)."""
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if (
            isinstance(item, Mapping)
            and item.get("role") == "user"
            and item.get("type", "message") == "message"
        ):
            return last_text_block(item.get("content"))
    return ""


class ResponsesWire(Wire):
    """Responses (``POST /openai/v1/responses``)."""

    route = "responses"
    default_model = "gpt-sim"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, Mapping) else None
        kind = fmt.get("type") if isinstance(fmt, Mapping) else None
        schema = fmt.get("schema") if isinstance(fmt, Mapping) and kind == "json_schema" else None
        return self.json_call(
            body,
            seq,
            _prompt(body),
            json_mode=kind in ("json_schema", "json_object"),
            schema=schema if isinstance(schema, Mapping) else None,
        )

    # -- the objects ------------------------------------------------------------------

    def _response(
        self,
        call: Call,
        status: str,
        output: list[dict[str, Any]] | None,
        usage: Tokens | None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        body = call.body
        text = body.get("text")
        out: dict[str, Any] = {
            "id": f"resp_sim{call.seq}",
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None if reason is None else {"reason": reason},
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": call.model,
        }
        if output is not None:
            out["output"] = output
        out["parallel_tool_calls"] = True
        out["previous_response_id"] = body.get("previous_response_id")
        out["reasoning"] = {"effort": None, "summary": None}
        out["store"] = bool(body.get("store", True))
        out["temperature"] = body.get("temperature", 1.0)
        out["text"] = text if isinstance(text, Mapping) else {"format": {"type": "text"}}
        out["tool_choice"] = body.get("tool_choice", "auto")
        out["tools"] = []
        out["top_p"] = body.get("top_p", 1.0)
        out["truncation"] = "disabled"
        out["usage"] = None if usage is None else _usage(usage)
        out["user"] = None
        out["metadata"] = body.get("metadata") or {}
        return out

    def _part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}

    def _message(self, call: Call, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"msg_sim{call.seq}",
            "type": "message",
            "status": status,
            "content": content,
            "role": "assistant",
        }

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, Mapping)]

    def _function_call(self, call: Call, i: int, arguments: str, status: str) -> dict[str, Any]:
        return {
            "id": f"fc_sim{call.seq}_{i}",
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": f"call_sim{call.seq}_{i}",
            "name": call.tool_calls[i].name,
        }

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        items = []
        if text or not call.tool_calls:
            items.append(self._message(call, "completed", [self._part(text)]))
        items += [
            self._function_call(call, i, c.text(), "completed")
            for i, c in enumerate(call.tool_calls)
        ]
        return self._response(call, "completed", items, usage)

    def _call_events(self, call: Call, seq: int, first: int, terminate: bool) -> list[bytes]:
        """``function_call`` output items: added, arguments in two deltas, done; cut (not
        ``terminate``) after half the first call's arguments. ``first``: its output index."""
        events = []
        for i, c in enumerate(call.tool_calls):
            text = c.text()
            where = {"item_id": f"fc_sim{call.seq}_{i}", "output_index": first + i}
            added = {
                "output_index": first + i,
                "item": self._function_call(call, i, "", "in_progress"),
            }
            events.append(_event(seq, "response.output_item.added", added))
            halves = [text[: len(text) // 2], text[len(text) // 2 :]][: 2 if terminate else 1]
            for n, half in enumerate(halves, 1):
                delta = {**where, "delta": half}
                events.append(_event(seq + n, "response.function_call_arguments.delta", delta))
            if not terminate:
                return events
            done = {**where, "arguments": text}
            events.append(_event(seq + 3, "response.function_call_arguments.done", done))
            item = {
                "output_index": first + i,
                "item": self._function_call(call, i, text, "completed"),
            }
            events.append(_event(seq + 4, "response.output_item.done", item))
            seq += 5
        return events

    # -- streams ----------------------------------------------------------------------

    def _opening(self, call: Call) -> list[bytes]:
        pending = self._response(call, "in_progress", [], None)
        return [
            _event(0, "response.created", {"response": pending}),
            _event(1, "response.in_progress", {"response": pending}),
        ]

    def _calls_only(self, call: Call, usage: Tokens, terminate: bool) -> list[bytes]:
        """The stream of a reply that only calls tools (no message item)."""
        events = self._opening(call) + self._call_events(call, 2, 0, terminate)
        if terminate:
            final = self.reply(call, "", usage)
            last = 2 + 5 * len(call.tool_calls)
            events.append(_event(last, "response.completed", {"response": final}))
        return events

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        if call.tool_calls and not any(pieces):
            return self._calls_only(call, usage, terminate)
        events = self._opening(call)
        item_id = f"msg_sim{call.seq}"
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        item = self._message(call, "in_progress", [])
        events.append(_event(2, "response.output_item.added", {"output_index": 0, "item": item}))
        events.append(_event(3, "response.content_part.added", {**where, "part": self._part("")}))
        seq = 4
        for piece in pieces:
            delta = {**where, "delta": piece, "logprobs": []}
            events.append(_event(seq, "response.output_text.delta", delta))
            seq += 1
        if not terminate:
            return events
        text = "".join(pieces)
        part = self._part(text)
        done = self._message(call, "completed", [part])
        done_text = {**where, "text": text, "logprobs": []}
        events.append(_event(seq, "response.output_text.done", done_text))
        events.append(_event(seq + 1, "response.content_part.done", {**where, "part": part}))
        item_done = {"output_index": 0, "item": done}
        events.append(_event(seq + 2, "response.output_item.done", item_done))
        events += self._call_events(call, seq + 3, 1, terminate=True)
        final = self.reply(call, text, usage)
        events.append(
            _event(seq + 3 + 5 * len(call.tool_calls), "response.completed", {"response": final})
        )
        return events

    # -- faults -----------------------------------------------------------------------

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        body = _CHAT.error(kind, status, call)
        if kind == "context_too_long":
            body["error"]["message"] = _CONTEXT_MESSAGE
            body["error"]["param"] = "input"
        return body

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        return self._response(call, "incomplete", [], Tokens(1, 0), reason="content_filter")

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        final = self.filtered(call, prompt_blocked)
        return [*self._opening(call), _event(2, "response.incomplete", {"response": final})]

    def missing(self, call: Call) -> dict[str, Any]:
        return self._response(call, "completed", None, Tokens(1, 1))

    def missing_stream(self, call: Call) -> list[bytes]:
        final = self.missing(call)
        return [*self._opening(call), _event(2, "response.completed", {"response": final})]

    def broken_event(self) -> bytes:
        return (
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","sequence_number":9,"delta":{\n\n'
        )


def _usage(usage: Tokens) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input + usage.output,
    }
