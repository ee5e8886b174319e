"""The plain HTTP route (``POST /http/complete``): JSON in, ``{"text": ...}`` out.

The counterpart of ``HTTPFallback``: the request carries ``prompt`` and/or
``messages`` (and ``tools``); a reply is ``{"text", "model", "usage":
{"input_tokens", "output_tokens"}}``, plus ``tool_calls: [{"id", "name",
"arguments"}]`` when scripted; errors are ``{"error": {"type", "message"}}``.
It never streams. A content filter is a 200 with ``finish_reason: "content_filter"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, Tokens, Wire, message_text

__all__ = ["HTTPWire"]

_MESSAGES = {
    "rate_limited": "rate limited: try again later",
    "quota": "quota exhausted: check your plan and billing details",
    "overloaded": "overloaded: try again later",
    "server_error": "internal server error",
    "auth": "invalid credentials",
    "model_not_found": "model not found",
    "bad_request": "bad request",
    "context_too_long": "prompt is too long for this model's context window",
}


class HTTPWire(Wire):
    """The generic JSON endpoint used by ``HTTPFallback``."""

    route = "http"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            prompt = ""
            for m in reversed(body.get("messages") or []):
                if isinstance(m, Mapping) and m.get("role") == "user":
                    prompt = message_text(m.get("content"))
                    break
        schema = body.get("json_schema")
        return Call(
            route=self.route,
            model=str(body.get("model", "http-sim")),
            body=body,
            stream=False,
            prompt=prompt,
            seq=seq,
            json_mode=isinstance(schema, Mapping),
            schema=schema if isinstance(schema, Mapping) else None,
        )

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, Mapping)]

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": text,
            "model": call.model,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
        if call.tool_calls:
            out["tool_calls"] = [
                {"id": f"call_sim{call.seq}_{i}", "name": c.name, "arguments": c.value()}
                for i, c in enumerate(call.tool_calls)
            ]
        return out

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        message = _MESSAGES.get(kind, f"HTTP {status}")
        return {"error": {"type": kind if kind != "status" else "error", "message": message}}

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        return {"text": "", "finish_reason": "content_filter", "model": call.model}

    def missing(self, call: Call) -> dict[str, Any]:
        return {"result": f"sim-http: {call.prompt[:40]}", "model": call.model}
