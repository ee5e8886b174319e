"""The Gemini generateContent wire format, as the simulated server speaks it.

JSON: ``GenerateContentResponse`` (candidates, usageMetadata, modelVersion);
``:streamGenerateContent?alt=sse``: ``data: {GenerateContentResponse}`` events
separated by CRLF CRLF (as Google sends them), the last with ``finishReason``;
without ``alt=sse``, one JSON array of those objects. Errors:
``{"error": {"code", "message", "status", "details"?}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.base import Call, Tokens, Wire, dumps, message_text

__all__ = ["GeminiWire"]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_MESSAGES = {
    "rate_limited": "Resource exhausted. Please try again later.",
    "quota": "You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: "
    "https://ai.google.dev/gemini-api/docs/rate-limits.",
    "overloaded": "The model is overloaded. Please try again later.",
    "server_error": "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting",
    "auth": "API key not valid. Please pass a valid API key.",
    "forbidden": "The caller does not have permission",
    "model_not_found": "models/{model} is not found for API version v1beta, or is not "
    "supported for generateContent. Call ListModels to see the list of available models "
    "and their supported methods.",
    "bad_request": 'Invalid JSON payload received. Unknown name "prompt": Cannot find field.',
    "context_too_long": "The input token count (1200000) exceeds the maximum number of "
    "tokens allowed (1048576).",
}

_SAFETY = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]


class GeminiWire(Wire):
    """generateContent / streamGenerateContent (``POST /gemini/v1beta/models/M:...``)."""

    route = "gemini"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        name = path.rsplit("/models/", 1)[-1]
        model, _, method = name.partition(":")
        prompt = ""
        for content in reversed(body.get("contents") or []):
            if isinstance(content, Mapping) and content.get("role", "user") == "user":
                prompt = message_text(content.get("parts"))
                break
        config = body.get("generationConfig") or body.get("generation_config") or {}
        mime = config.get("responseMimeType") or config.get("response_mime_type")
        schema = None
        for key in (
            "responseJsonSchema",
            "responseSchema",
            "response_json_schema",
            "response_schema",
        ):
            if isinstance(config.get(key), Mapping):
                schema = config[key]
                break
        return Call(
            route=self.route,
            model=model or "gemini-sim",
            body=body,
            stream=method == "streamGenerateContent",
            prompt=prompt,
            seq=seq,
            json_mode=mime == "application/json",
            schema=schema,
            sse=query.get("alt") == "sse",
        )

    def stream_content_type(self, call: Call) -> str:
        return "text/event-stream" if call.sse else "application/json"

    def _response(
        self, call: Call, candidate: dict[str, Any] | None, usage: Tokens
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if candidate is not None:
            out["candidates"] = [candidate]
        out["usageMetadata"] = {
            "promptTokenCount": usage.input,
            "candidatesTokenCount": usage.output,
            "totalTokenCount": usage.input + usage.output,
        }
        if usage.cache_read:
            out["usageMetadata"]["cachedContentTokenCount"] = usage.cache_read
        out["modelVersion"] = call.model
        out["responseId"] = f"sim-{call.seq}"
        return out

    def _candidate(self, text: str, finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        return candidate

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        names = []
        for tool in body.get("tools") or []:
            declarations = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
            names += [str(d.get("name")) for d in declarations or [] if isinstance(d, Mapping)]
        return names

    def _calls_candidate(self, call: Call, text: str, finish: str | None) -> dict[str, Any]:
        """A candidate whose parts are ``text`` (if any) and one ``functionCall`` per
        scripted call (Gemini sends no call ids, and each call whole)."""
        candidate = self._candidate(text, finish)
        parts = candidate["content"]["parts"] if text else []
        parts += [{"functionCall": {"name": c.name, "args": c.value()}} for c in call.tool_calls]
        candidate["content"]["parts"] = parts
        return candidate

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        if call.tool_calls:
            return self._response(call, self._calls_candidate(call, text, "STOP"), usage)
        return self._response(call, self._candidate(text, "STOP"), usage)

    def _frame(self, call: Call, objects: list[dict[str, Any]], terminate: bool) -> list[bytes]:
        if call.sse:
            return [b"data: " + dumps(o).encode() + b"\r\n\r\n" for o in objects]
        framed = [(b"[" if i == 0 else b",\r\n") + dumps(o).encode() for i, o in enumerate(objects)]
        if terminate:
            framed.append(b"]" if framed else b"[]")
        return framed

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        objects = []
        last = len(pieces) - 1
        calls = call.tool_calls
        for i, piece in enumerate(pieces):
            if calls and not piece:
                continue
            finish = "STOP" if terminate and i == last and not calls else None
            objects.append(self._response(call, self._candidate(piece, finish), usage))
        if calls and terminate:  # whole calls, in the last chunk: a cut stream has none
            objects.append(self._response(call, self._calls_candidate(call, "", "STOP"), usage))
        return self._frame(call, objects, terminate)

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        if kind == "auth" and status == 403:
            kind = "forbidden"
        message = _MESSAGES.get(kind, _MESSAGES["server_error"]).format(model=call.model)
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
        if kind == "rate_limited":
            error["details"] = [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
            ]
        elif kind == "quota":
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/"
                            "generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        }
                    ],
                }
            ]
        return {"error": error}

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        if prompt_blocked:
            out = self._response(call, None, Tokens(1, 0))
            out["promptFeedback"] = {"blockReason": "SAFETY", "safetyRatings": _SAFETY}
            return out
        candidate = {"finishReason": "SAFETY", "index": 0, "safetyRatings": _SAFETY}
        return self._response(call, candidate, Tokens(1, 0))

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        return self._frame(call, [self.filtered(call, prompt_blocked)], True)

    def missing(self, call: Call) -> dict[str, Any]:
        return self._response(call, {"finishReason": "STOP", "index": 0}, Tokens(1, 1))

    def missing_stream(self, call: Call) -> list[bytes]:
        return self._frame(call, [self.missing(call)], True)

    def broken_event(self) -> bytes:
        return b'data: {"candidates":[{"content":{\r\n\r\n'
