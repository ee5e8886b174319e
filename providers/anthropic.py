"""``AnthropicMessages``: the Anthropic Messages API (``POST {base_url}/v1/messages``).

Structured output is a single forced tool named after the schema: its
``tool_use.input`` comes back as JSON text. A trailing assistant message is
sent as a prefill (continue from this prefix) and only the new text is returned.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Unpack

from orchestrator.config.spec import BuildContext, PositiveInt, given
from orchestrator.errors import GuardrailTriggered, InvalidOutput, ProviderError
from orchestrator.secrets import Secret
from orchestrator.types import Request, Response, Usage
from providers.http.base import (
    BAD_SHAPE,
    Missing,
    VendorProvider,
    VendorSettings,
    dig,
    join_url,
    schema_name,
    tokens,
)
from providers.http.errors import map_anthropic_error
from providers.http.spec import VendorSpec

__all__ = ["AnthropicMessages", "AnthropicSpec"]


def _refusal(provider: str) -> GuardrailTriggered:
    return GuardrailTriggered("model refused to answer (stop_reason=refusal)", provider=provider)


class _Prefill:
    """Anthropic rejects a prefill ending in whitespace: send it trimmed, and drop the
    same whitespace from the start of the continuation (the caller already has it)."""

    __slots__ = ("pending",)

    def __init__(self, trimmed: str) -> None:
        self.pending = bool(trimmed)

    def new_text(self, text: str) -> str:
        if self.pending and text:
            text = text.lstrip()
            self.pending = not text
        return text


class AnthropicMessages(VendorProvider):
    """A Claude model over the Messages API.

    ``AnthropicMessages("claude-sonnet-4-5")`` reads ``ANTHROPIC_API_KEY`` at call
    time; ``max_tokens`` is used when the request does not set one (the API
    requires it). The key goes in ``x-api-key``, only over https or to loopback
    unless ``allow_insecure_http=True``.
    """

    family = "anthropic"
    env_vars = ("ANTHROPIC_API_KEY",)

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        max_tokens: int = 1024,
        anthropic_version: str = "2023-06-01",
        **settings: Unpack[VendorSettings],
    ) -> None:
        super().__init__(model, base_url=base_url, **settings)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"AnthropicMessages.max_tokens={max_tokens!r} must be a positive int")
        self.max_tokens = max_tokens
        self.anthropic_version = anthropic_version
        self._url = join_url(self.base_url, "/v1/messages")

    def auth_headers(self, key: Secret) -> dict[str, str]:
        return {"x-api-key": key.reveal(), "anthropic-version": self.anthropic_version}

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_anthropic_error(status, headers, body, provider=self.name, key=self.secrets())

    def payload(self, request: Request, *, stream: bool) -> tuple[dict[str, Any], _Prefill]:
        """The Messages request body, and the prefill bookkeeping for the reply."""
        system = [request.system] if request.system else []
        messages: list[dict[str, str]] = []
        for m in request.messages:
            if m.role == "system":
                system.append(m.content)
            else:
                role = "assistant" if m.role == "assistant" else "user"
                messages.append({"role": role, "content": m.content})
        trimmed = ""
        if messages and messages[-1]["role"] == "assistant":
            content = messages[-1]["content"]
            kept = content.rstrip()
            trimmed = content[len(kept) :]
            if kept:
                messages[-1] = {"role": "assistant", "content": kept}
            else:
                messages.pop()
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.json_schema is not None:
            tool = schema_name(request.schema_name)
            body["tools"] = [
                {
                    "name": tool,
                    "description": "Give the answer as this tool's input.",
                    "input_schema": dict(request.json_schema),
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": tool}
        if stream:
            body["stream"] = True
        return body, _Prefill(trimmed)

    def parse(self, data: Any, json_mode: bool, prefill: _Prefill) -> Response:
        """The Response for a Messages reply (raises on refusal or a missing field)."""
        if isinstance(data, Mapping) and data.get("stop_reason") == "refusal":
            raise _refusal(self.name)
        content = dig(data, "content")
        if not isinstance(content, list):
            raise Missing("reply has no content list")
        blocks = [b for b in content if isinstance(b, Mapping)]
        if json_mode:
            tool = next((b for b in blocks if b.get("type") == "tool_use"), None)
            if tool is None or "input" not in tool:
                raise Missing("reply has no tool_use block with an input (structured output)")
            text = json.dumps(tool["input"])
        else:
            texts = (str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            text = prefill.new_text("".join(texts))
        usage = data.get("usage")
        return self.response(
            text,
            Usage(tokens(usage.get("input_tokens")), tokens(usage.get("output_tokens")))
            if isinstance(usage, Mapping)
            else None,
            data.get("model"),
            data.get("stop_reason"),
        )

    async def complete(self, request: Request) -> Response:
        """One Messages call; every failure raised as an ``orchestrator.errors`` class."""
        payload, prefill = self.payload(request, stream=False)
        data = await self.post_json(self._url, payload)
        return self.parsed(self.parse, data, request.json_schema is not None, prefill)

    async def stream(self, request: Request) -> AsyncIterator[str | Response]:
        """Yield text (or, for structured output, tool-input JSON) deltas, then the Response.

        Ends cleanly only on ``message_stop``; otherwise ``StreamInterrupted``.
        An ``error`` event is mapped like an HTTP error of its type.
        """
        payload, prefill = self.payload(request, stream=True)
        json_mode = request.json_schema is not None
        parts: list[str] = []
        input_tokens = output_tokens = 0
        saw_usage = done = False
        model: str | None = None
        stop: str | None = None
        async for event in self.post_events(self._url, payload):
            data = await self.event_json(event)
            kind = data.get("type", event.event) if isinstance(data, Mapping) else None
            if kind == "message_stop":
                done = True
                break
            if kind == "error":
                raise map_anthropic_error(None, {}, data, provider=self.name, key=self.secrets())
            text = ""
            failure: InvalidOutput | None = None
            try:
                if kind == "message_start":
                    message = dig(data, "message", what="stream event")
                    model = message.get("model")
                    usage = message.get("usage") or {}
                    input_tokens = tokens(usage.get("input_tokens"))
                    output_tokens = tokens(usage.get("output_tokens"))
                    saw_usage = "input_tokens" in usage
                elif kind == "content_block_delta":
                    delta = dig(data, "delta", what="stream event")
                    piece = delta.get("partial_json") if json_mode else delta.get("text")
                    text = piece if isinstance(piece, str) else ""
                    text = text if json_mode else prefill.new_text(text)
                elif kind == "message_delta":
                    stop = dig(data, "delta", what="stream event").get("stop_reason") or stop
                    if stop == "refusal":
                        raise _refusal(self.name)
                    usage = data.get("usage") or {}
                    output_tokens = tokens(usage.get("output_tokens") or output_tokens)
            except BAD_SHAPE as exc:
                failure = self.invalid(exc)
            if failure is not None:
                raise failure  # not in the except block, where exc would be the context
            if text:
                parts.append(text)
                yield text
        if not done:
            raise self.unfinished(parts, "message_stop")
        if json_mode and not parts:
            raise self.empty_stream("tool input (structured output)")
        usage_out = Usage(input_tokens, output_tokens) if saw_usage else None
        yield self.response("".join(parts), usage_out, model, stop)


# -- the chain file's ``type: anthropic`` ------------------------------------------


class AnthropicSpec(VendorSpec):
    """``type: anthropic`` in a chain file: an :class:`AnthropicMessages`."""

    order = 20
    key_env = AnthropicMessages.env_vars[0]
    type: Literal["anthropic"]
    max_tokens: PositiveInt | None = None
    anthropic_version: str | None = None

    def build(self, ctx: BuildContext) -> AnthropicMessages:
        return AnthropicMessages(
            self.model,
            name=ctx.name,
            **self.vendor_kwargs(),
            **given(max_tokens=self.max_tokens, anthropic_version=self.anthropic_version),
        )
