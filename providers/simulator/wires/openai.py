"""The OpenAI Chat Completions wire format, as the simulated server speaks it.

JSON: ``chat.completion`` objects; SSE: ``data: {chat.completion.chunk}`` events,
a final chunk with ``finish_reason``, a usage chunk when
``stream_options.include_usage``, then ``data: [DONE]``. Errors:
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, Tokens, Wire, dumps, message_text

__all__ = ["OpenAIWire"]

_DONE = b"data: [DONE]\n\n"

# kind -> (type, code, message); {model} and {n} are filled in.
_ERRORS: dict[str, tuple[str, str | None, str]] = {
    "rate_limited": (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for {model} in organization org-sim on requests per min (RPM): "
        "Limit 3, Used 3, Requested 1. Please try again in 1s.",
    ),
    "quota": (
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details. "
        "For more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    ),
    "overloaded": (
        "server_error",
        None,
        "The engine is currently overloaded, please try again later.",
    ),
    "server_error": (
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    "auth": (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    "forbidden": (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    "model_not_found": (
        "invalid_request_error",
        "model_not_found",
        "The model `{model}` does not exist or you do not have access to it.",
    ),
    "bad_request": (
        "invalid_request_error",
        None,
        "Invalid value for 'temperature': expected a number between 0 and 2.",
    ),
    "context_too_long": (
        "invalid_request_error",
        "context_length_exceeded",
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages.",
    ),
}


class OpenAIWire(Wire):
    """Chat Completions (``POST /openai/v1/chat/completions``)."""

    route = "openai"
    default_model = "gpt-sim"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        messages = body.get("messages") or []
        prompt = ""
        for m in reversed(messages):
            if isinstance(m, Mapping) and m.get("role") == "user":
                prompt = message_text(m.get("content"))
                break
        fmt = body.get("response_format") or {}
        kind = fmt.get("type") if isinstance(fmt, Mapping) else None
        schema = None
        if kind == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
        options = body.get("stream_options") or {}
        return self.json_call(
            body,
            seq,
            prompt,
            json_mode=kind in ("json_schema", "json_object"),
            schema=schema,
            include_usage=bool(isinstance(options, Mapping) and options.get("include_usage")),
        )

    def _head(self, call: Call, obj: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-sim{call.seq}",
            "object": obj,
            "created": int(time.time()),
            "model": call.model,
            "system_fingerprint": "fp_sim",
        }

    def _usage(self, usage: Tokens) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.output,
        }
        if usage.cache_read:  # OpenAI caches by itself: there are no cache writes
            out["prompt_tokens_details"] = {"cached_tokens": usage.cache_read, "audio_tokens": 0}
        return out

    def _completion(
        self, call: Call, message: dict[str, Any] | None, finish: str, usage: Tokens
    ) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
        if message is not None:
            choice["message"] = message
        out = self._head(call, "chat.completion")
        out["choices"] = [choice]
        out["usage"] = self._usage(usage)
        return out

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [
            str((t.get("function") or {}).get("name"))
            for t in body.get("tools") or []
            if isinstance(t, Mapping)
        ]

    def _call_id(self, call: Call, i: int) -> str:
        return f"call_sim{call.seq}_{i}"

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if not call.tool_calls:
            return self._completion(call, message, "stop", usage)
        message["content"] = text or None
        message["tool_calls"] = [
            {
                "id": self._call_id(call, i),
                "type": "function",
                "function": {"name": c.name, "arguments": c.text()},
            }
            for i, c in enumerate(call.tool_calls)
        ]
        return self._completion(call, message, "tool_calls", usage)

    def _tool_chunks(self, call: Call, *, terminate: bool) -> list[bytes]:
        """Each call as OpenAI streams it: id and name first, then its arguments in two
        pieces; cut (not ``terminate``) inside the first call, after half its arguments."""
        events = []
        for i, c in enumerate(call.tool_calls):
            start = {
                "index": i,
                "id": self._call_id(call, i),
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }
            text = c.text()
            halves = [text[: len(text) // 2], text[len(text) // 2 :]]
            if not terminate:
                halves = halves[:1]
            events.append(self._chunk(call, {"tool_calls": [start]}, None))
            for half in halves:
                piece = {"index": i, "function": {"arguments": half}}
                events.append(self._chunk(call, {"tool_calls": [piece]}, None))
            if not terminate:
                break
        return events

    def _chunk(self, call: Call, delta: dict[str, Any], finish: str | None) -> bytes:
        out = self._head(call, "chat.completion.chunk")
        out["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if call.include_usage:
            out["usage"] = None
        return b"data: " + dumps(out).encode() + b"\n\n"

    def _tail(self, call: Call, finish: str, usage: Tokens) -> list[bytes]:
        events = [self._chunk(call, {}, finish)]
        if call.include_usage:
            last = self._head(call, "chat.completion.chunk")
            last["choices"] = []
            last["usage"] = self._usage(usage)
            events.append(b"data: " + dumps(last).encode() + b"\n\n")
        events.append(_DONE)
        return events

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        events = [self._chunk(call, {"role": "assistant", "content": "", "refusal": None}, None)]
        events += [
            self._chunk(call, {"content": p}, None) for p in pieces if p or not call.tool_calls
        ]
        if call.tool_calls:
            events += self._tool_chunks(call, terminate=terminate)
        if terminate:
            events += self._tail(call, "tool_calls" if call.tool_calls else "stop", usage)
        return events

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        if kind == "auth" and status == 403:
            kind = "forbidden"
        etype, code, message = _ERRORS.get(kind, _ERRORS["server_error"])
        return {
            "error": {
                "message": message.format(model=call.model),
                "type": etype,
                "param": "messages" if kind == "context_too_long" else None,
                "code": code,
            }
        }

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        message = {"role": "assistant", "content": None, "refusal": None}
        return self._completion(call, message, "content_filter", Tokens(1, 0))

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        first = self._chunk(call, {"role": "assistant", "content": "", "refusal": None}, None)
        return [first, *self._tail(call, "content_filter", Tokens(1, 0))]

    def missing(self, call: Call) -> dict[str, Any]:
        return self._completion(call, None, "stop", Tokens(1, 1))

    def missing_stream(self, call: Call) -> list[bytes]:
        head = self._head(call, "chat.completion.chunk")
        return [b"data: " + dumps(head).encode() + b"\n\n", _DONE]

    def broken_event(self) -> bytes:
        return b'data: {"id":"chatcmpl-sim","object":"chat.completion.chunk","choices":[{\n\n'
