"""Bedrock's InvokeModel routes for Anthropic models, as the simulated server speaks them
(route ``bedrock``: ``POST /bedrock/model/{modelId}/invoke`` and
``/invoke-with-response-stream``), what anthropic's ``AnthropicBedrock`` client calls.

The request and a whole reply are Anthropic Messages JSON (the model in the path,
``anthropic_version`` in the body); a stream is AWS event-stream ``chunk`` frames
whose payload is ``{"bytes": base64(one Messages stream event)}``. Errors are
Bedrock's (:mod:`providers.simulator.wires.bedrock`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from providers.simulator.wires.anthropic import AnthropicWire
from providers.simulator.wires.base import Call, Tokens, dumps
from providers.simulator.wires.bedrock import BedrockWire, model_and_operation
from providers.simulator.wires.eventstream import EVENT_STREAM, event, frame

__all__ = ["BedrockInvokeWire"]


def _chunks(sse: list[bytes]) -> list[bytes]:
    """Messages SSE events as ``chunk`` frames (their ``data:`` JSON, base64)."""
    out = []
    for raw in sse:
        for line in raw.split(b"\n"):
            if line.startswith(b"data: "):
                data = base64.b64encode(line[len(b"data: ") :]).decode()
                out.append(event("chunk", {"bytes": data}))
    return out


class BedrockInvokeWire(AnthropicWire):
    """InvokeModel / InvokeModelWithResponseStream, Anthropic Messages inside."""

    route = "bedrock"
    keep_alive = b""
    _converse = BedrockWire()

    def stream_content_type(self, call: Call) -> str:
        return EVENT_STREAM

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        model, operation = model_and_operation(path) or ("", "")
        call = super().parse(body, path, query, seq)
        call.model, call.stream = model, operation.endswith("-stream")
        return call

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        return _chunks(super().stream(call, pieces, usage, terminate=terminate))

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        return _chunks(super().filtered_stream(call, prompt_blocked))

    def missing_stream(self, call: Call) -> list[bytes]:
        return _chunks(super().missing_stream(call))

    def broken_event(self) -> bytes:
        bad = base64.b64encode(b'{"type":"content_block_delta","index":0,"delta":{').decode()
        headers = {":event-type": "chunk", ":content-type": "application/json"}
        return frame({**headers, ":message-type": "event"}, dumps({"bytes": bad}).encode())

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        return self._converse.error(kind, status, call)

    def error_headers(self, kind: str, status: int) -> dict[str, str]:
        return self._converse.error_headers(kind, status)

    def stream_error(self, kind: str, status: int, call: Call) -> bytes:
        return self._converse.stream_error(kind, status, call)
