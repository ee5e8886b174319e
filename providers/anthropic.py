"""``AnthropicMessages``: the Anthropic Messages API (``POST {base_url}/v1/messages``).

Structured output is a single forced tool named after the schema: its
``tool_use.input`` comes back as JSON text. The request's own tools travel
beside it (``tool_use`` blocks of other tools are tool calls); tool results
go back as ``tool_result`` blocks of one user turn. A trailing assistant message is
sent as a prefill (continue from this prefix) and only the new text is returned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal, Unpack

from orchestrator import PROGRESS
from orchestrator.config.spec import BuildContext, PositiveInt, given
from orchestrator.errors import GuardrailTriggered, InvalidOutput, ProviderError
from orchestrator.secrets import Secret
from orchestrator.types import Request, Response, ToolCallDelta, Usage
from providers.http.base import (
    Missing,
    VendorProvider,
    VendorSettings,
    dig,
    join_url,
    off_loop,
    schema_name,
)
from providers.http.errors import map_anthropic_error
from providers.http.spec import VendorSpec
from providers.http.tools import ToolUses, ToolUseStream
from providers.http.usage import ANTHROPIC as ANTHROPIC_USAGE
from providers.http.usage import usage_of

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
    time, and ``ANTHROPIC_BASE_URL`` when built without ``base_url=``; ``max_tokens``
    is used when the request does not set one (the API requires it). The key goes in
    ``x-api-key``, only over https or to loopback unless ``allow_insecure_http=True``.
    ``accepts_prefill`` defaults by model (Claude 4.6 and later refuse one:
    :mod:`providers.http.prefill`).
    """

    family = "anthropic"
    env_vars: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)
    base_url_vars: ClassVar[tuple[str, ...]] = ("ANTHROPIC_BASE_URL",)
    default_base_url = "https://api.anthropic.com"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        max_tokens: int = 1024,
        anthropic_version: str = "2023-06-01",
        **settings: Unpack[VendorSettings],
    ) -> None:
        super().__init__(model, base_url=base_url, **settings)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"AnthropicMessages.max_tokens={max_tokens!r} must be a positive int")
        self.max_tokens = max_tokens
        self.anthropic_version = anthropic_version
        self._url = self._stream_url = join_url(self.base_url, "/v1/messages")

    def auth_headers(self, key: Secret) -> dict[str, str]:
        return {"x-api-key": key.reveal(), "anthropic-version": self.anthropic_version}

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_anthropic_error(status, headers, body, provider=self.name, key=self.secrets())

    def payload(
        self, request: Request, *, stream: bool
    ) -> tuple[dict[str, Any], _Prefill, str | None]:
        """The Messages request body, the prefill bookkeeping for the reply, and the
        name of the answer tool that carries structured output (None without a schema)."""
        system = [request.system] if request.system else []
        messages = _messages(request, system)
        trimmed = ""
        if messages and messages[-1]["role"] == "assistant":
            content = messages[-1]["content"]
            if isinstance(content, str):  # a prefill; an assistant turn of tool calls is not
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
        answer = _add_tools(body, request)
        if stream:
            body["stream"] = True
        return body, _Prefill(trimmed), answer

    def parse(self, data: Any, answer: str | None, prefill: _Prefill) -> Response:
        """The Response for a Messages reply (raises on refusal or a missing field).

        ``answer`` names the tool whose input is the structured output, if any;
        every other ``tool_use`` block is a tool call.
        """
        if isinstance(data, Mapping) and data.get("stop_reason") == "refusal":
            raise _refusal(self.name)
        content = dig(data, "content")
        if not isinstance(content, list):
            raise Missing("reply has no content list")
        texts: list[str] = []
        uses = ToolUses(answer)
        for b in content:
            kind = b.get("type") if isinstance(b, Mapping) else None
            if kind == "text":
                texts.append(str(b.get("text", "")))
            elif kind == "tool_use":
                uses.add(b.get("id"), b.get("name"), b.get("input"))
        text, calls = uses.reply(prefill.new_text("".join(texts)), "tool_use")
        usage = _usage(data)
        return self.response(text, usage, data.get("model"), data.get("stop_reason"), calls)

    def reply_usage(self, data: Any) -> Usage | None:
        return _usage(data)

    async def complete(self, request: Request) -> Response:
        """One Messages call; every failure raised as an ``orchestrator.errors`` class."""
        payload, prefill, answer = self.payload(request, stream=False)
        data = await self.post_json(self._url, payload)
        return self.parsed_reply(self.parse, data, answer, prefill)

    async def stream(self, request: Request) -> AsyncIterator[str | ToolCallDelta | Response]:
        """Yield text (or, for structured output, tool-input JSON) and tool-call deltas,
        :data:`~orchestrator.PROGRESS` for every other event but ``ping``, and the
        Response as soon as ``message_delta`` gives the stop reason (the content is
        complete; ``message_stop`` is still read, and its absence changes nothing).

        Without a stop reason, ends cleanly only on ``message_stop``; otherwise
        ``StreamInterrupted``. An ``error`` event is mapped like an HTTP error of its type.
        """
        payload, prefill, answer = self.payload(request, stream=True)
        state = _StreamState(answer, prefill)
        done = stopped = False
        kind = None
        events = await self.post_events(self._stream_url, payload)
        try:
            async for batch in events:
                for event in batch:
                    data = (
                        await self.event_json_off_loop(event)
                        if off_loop(event.data)
                        else self.event_json(event)
                    )
                    kind = data.get("type", event.event) if isinstance(data, Mapping) else None
                    if kind == "message_stop" or done:
                        stopped = True
                        break
                    if kind == "error":
                        raise map_anthropic_error(
                            None, {}, data, provider=self.name, key=self.secrets()
                        )
                    if kind == "ping":
                        continue  # a keep-alive: no progress
                    item = self.parsed(state.read, kind, data)
                    if kind == "message_delta" and state.stop == "refusal":
                        raise _refusal(self.name)
                    yield item or PROGRESS
                    if kind == "message_delta" and state.stop is not None:
                        done = True
                        yield self._final(state, answer)
                if stopped:
                    break
            if not done:
                yield self._final(state, answer, ended=kind == "message_stop")
        except InvalidOutput as error:
            self.bill(error, state.usage())  # the usage seen so far
            raise
        finally:  # now, not later by a task of the loop's (as an unclosed one would be)
            await events.aclose()

    def _final(self, state: _StreamState, answer: str | None, ended: bool = True) -> Response:
        """The Response of a stream whose content is complete (``ended``: its end was seen)."""
        if not ended:
            raise self.unfinished(state.parts, "message_stop")
        if answer is not None and not state.parts and not state.calls:
            raise self.empty_stream("tool input (structured output)")
        calls = self.parsed(state.calls.calls)
        return self.response("".join(state.parts), state.usage(), state.model, state.stop, calls)


def _usage(data: Any) -> Usage | None:
    """The ``usage`` a Messages reply reports (None when it has none)."""
    return usage_of(data.get("usage") if isinstance(data, Mapping) else None, ANTHROPIC_USAGE)


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class _StreamState(ToolUseStream):
    """What a Messages stream has said so far; :meth:`read` takes one event."""

    def __init__(self, answer: str | None, prefill: _Prefill) -> None:
        super().__init__(answer)
        self.prefill = prefill
        self.counts: dict[str, Any] = {}  # the usage counts reported so far
        self.counted: Usage | None = None
        self.model: str | None = None

    def usage(self) -> Usage | None:
        """The usage the stream reported so far (None before ``message_start`` gave one)."""
        return self.counted

    def read(self, kind: Any, data: Any) -> str | ToolCallDelta | None:
        """The text or tool-call delta one event carries, if any (bookkeeping the rest)."""
        if kind == "message_start":
            message = dig(data, "message", what="stream event")
            self.model = message.get("model")
            usage = message.get("usage")
            if isinstance(usage, Mapping) and "input_tokens" in usage:
                self._count(usage)
        elif kind == "content_block_start":
            return self._start(data.get("index"), dig(data, "content_block", what="stream event"))
        elif kind == "content_block_delta":
            return self._delta(data.get("index"), dig(data, "delta", what="stream event"))
        elif kind == "message_delta":
            self.stop = dig(data, "delta", what="stream event").get("stop_reason") or self.stop
            if self.counted is not None and isinstance(data.get("usage"), Mapping):
                self._count(data["usage"])
        return None

    def _count(self, usage: Mapping[str, Any]) -> None:
        """Take ``message_start``'s counts, then each ``message_delta``'s over them (they
        are cumulative: output, and on recent models input and cache too; a count it
        leaves out, or gives as 0, keeps the one before)."""
        self.counts.update((k, usage[k]) for k in _COUNTS if usage.get(k))
        self.counted = usage_of(self.counts, ANTHROPIC_USAGE)

    def _start(self, index: Any, block: Any) -> ToolCallDelta | None:
        if block.get("type") != "tool_use":
            self.blocks[index] = "text"
            return None
        return self.start_tool(index, block.get("id"), block.get("name"))

    def _delta(self, index: Any, delta: Any) -> str | ToolCallDelta | None:
        block = self.blocks.get(index, "answer" if self.answer is not None else "text")
        if isinstance(block, int):
            piece = delta.get("partial_json")
            if isinstance(piece, str) and piece:
                return self.calls.add(ToolCallDelta(block, arguments=piece))
            return None
        piece = delta.get("partial_json") if block == "answer" else delta.get("text")
        text = piece if isinstance(piece, str) else ""
        text = text if block == "answer" else self.prefill.new_text(text)
        if text:
            self.parts.append(text)
        return text or None


def _messages(request: Request, system: list[str]) -> list[dict[str, Any]]:
    """The history as Messages turns (system text goes to ``system``): assistant tool
    calls as ``tool_use`` blocks, consecutive tool results merged into one user turn."""
    messages: list[dict[str, Any]] = []
    for m in request.messages:
        if m.role == "system":
            system.append(m.content)
        elif m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        elif m.tool_calls:
            content: list[dict[str, Any]] = (
                [{"type": "text", "text": m.content}] if m.content else []
            )
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
                for c in m.tool_calls
            ]
            messages.append({"role": "assistant", "content": content})
        else:
            role = "assistant" if m.role == "assistant" else "user"
            messages.append({"role": role, "content": m.content})
    return messages


def _add_tools(body: dict[str, Any], request: Request) -> str | None:
    """Put the request's tools, and the answer tool of structured output, in ``body``;
    returns the answer tool's name (None without a schema).

    With a schema and tools the model must call one of them (``any``): a tool to
    go on with the loop, or the answer tool to answer; ``tool_choice="none"``
    forces the answer, a tool name forces that tool.
    """
    tools = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in request.tools
    ]
    choice = request.tool_choice
    answer = None
    if request.json_schema is not None:
        answer = schema_name(request.schema_name)
        while any(t["name"] == answer for t in tools):
            answer = f"{answer[:60]}_out"
        tools.append(
            {
                "name": answer,
                "description": "Give the answer as this tool's input.",
                "input_schema": dict(request.json_schema),
            }
        )
    if tools:
        body["tools"] = tools
        wire = _CHOICES.get(choice or "auto", {"type": "tool", "name": choice})
        if answer is not None and (not request.tools or choice == "none"):
            wire = {"type": "tool", "name": answer}
        elif answer is not None and choice in (None, "auto", "required"):
            wire = {"type": "any"}
        if choice is not None or answer is not None:
            body["tool_choice"] = wire
    return answer


_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}


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
