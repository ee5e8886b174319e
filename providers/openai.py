"""``OpenAIChat``: the Chat Completions API, on OpenAI or any compatible endpoint.

Works with OpenAI, Azure-style gateways, OpenRouter, vLLM, Ollama and other
servers that speak ``POST {base_url}/chat/completions``. Structured output is
asked for with ``response_format: {"type": "json_schema", ...}``; streams use
``stream_options.include_usage`` so the final Response carries token usage.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Unpack

from orchestrator import PROGRESS
from orchestrator.config.spec import BuildContext, given
from orchestrator.errors import (
    GuardrailTriggered,
    InvalidOutput,
    ProviderError,
)
from orchestrator.secrets import Secret
from orchestrator.types import (
    TOOL_CHOICES,
    Message,
    Request,
    Response,
    Tool,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from providers.http.base import (
    Missing,
    VendorProvider,
    VendorSettings,
    dig,
    join_url,
    off_loop,
    schema_name,
)
from providers.http.errors import map_openai_error, short
from providers.http.shape import JSON_OBJECT
from providers.http.spec import VendorSpec
from providers.http.tools import (
    MAX_TOOL_CALLS,
    ToolCallAssembler,
    arguments_json,
    decode_arguments,
    tool_call,
)
from providers.http.usage import OPENAI as OPENAI_USAGE
from providers.http.usage import usage_of

__all__ = ["OpenAIChat", "OpenAISpec"]


def _usage(data: Any) -> Usage | None:
    return usage_of(data.get("usage") if isinstance(data, JSON_OBJECT) else None, OPENAI_USAGE)


class OpenAIChat(VendorProvider):
    """An OpenAI Chat Completions model (or any OpenAI-compatible endpoint).

    ``OpenAIChat("gpt-4o-mini")`` reads ``OPENAI_API_KEY`` at call time; give
    ``base_url=`` for another region or server (``.../v1``, without
    ``/chat/completions``), else ``OPENAI_BASE_URL`` is used when set.
    ``max_tokens_param="max_completion_tokens"`` for OpenAI reasoning models
    that refuse ``max_tokens``. The key travels only
    over https or to loopback unless ``allow_insecure_http=True``.
    ``accepts_prefill=True`` for a server that continues a trailing assistant
    message (a mid-stream rescue is otherwise asked for as a user turn:
    :mod:`providers.http.prefill`).
    """

    family = "openai"
    env_vars = ("OPENAI_API_KEY",)
    base_url_vars = ("OPENAI_BASE_URL",)
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        max_tokens_param: str = "max_tokens",
        **settings: Unpack[VendorSettings],
    ) -> None:
        super().__init__(model, base_url=base_url, **settings)
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(
                f"OpenAIChat.max_tokens_param={max_tokens_param!r}: "
                "use 'max_tokens' or 'max_completion_tokens'"
            )
        self.max_tokens_param = max_tokens_param
        self._url = join_url(self.base_url, "/chat/completions")

    def auth_headers(self, key: Secret) -> dict[str, str]:
        return {"authorization": f"Bearer {key.reveal()}"}

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_openai_error(status, headers, body, provider=self.name, key=self.secrets())

    def payload(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The Chat Completions request body for ``request``."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for m in request.messages:  # a loop: no generator's frame to start and resume
            messages.append(_message(m))
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
            if request.tool_choice is not None:
                body["tool_choice"] = _tool_choice(request.tool_choice)
        if request.max_tokens is not None:
            body[self.max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        if request.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(request.schema_name),
                    "schema": dict(request.json_schema),
                    "strict": False,
                },
            }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _refused(self, finish: Any, refusal: Any) -> GuardrailTriggered | None:
        if finish == "content_filter":
            return GuardrailTriggered(
                "reply withheld by the content filter (finish_reason=content_filter)",
                provider=self.name,
            )
        if isinstance(refusal, str) and refusal:
            return GuardrailTriggered(f"model refused: {short(refusal)}", provider=self.name)
        return None

    def parse(self, data: Any) -> Response:
        """The Response for a Chat Completions reply (raises on refusal or a missing field)."""
        choice = dig(data, "choices", 0)
        message: Any = choice.get("message") if isinstance(choice, JSON_OBJECT) else None
        is_object = isinstance(message, JSON_OBJECT)
        refusal = message.get("refusal") if is_object else None
        finish = choice.get("finish_reason")
        if finish == "content_filter" or refusal:
            refused = self._refused(finish, refusal)
            if refused is not None:
                raise refused
        if message is None:  # absent: dig names the missing field
            message = dig(data, "choices", 0, "message")
        text = message.get("content")
        raw_calls = message.get("tool_calls") if is_object else None
        calls = () if raw_calls is None else _calls(raw_calls)
        if text is None and calls:
            text = ""  # the model only called tools
        if not isinstance(text, str):
            raise Missing("reply has no choices[0].message.content string")
        return self.response(text, _usage(data), data.get("model"), finish, calls)

    async def complete(self, request: Request) -> Response:
        """One Chat Completions call; every failure raised as an ``orchestrator.errors`` class."""
        payload = self.payload(request, stream=False)
        data = await self.post_json(self._url, payload, plain=_plain(request))
        return self.parsed_reply(self.parse, data)

    def reply_usage(self, data: Any) -> Usage | None:
        return _usage(data)

    def _read(self, state: _ChatStream, chunk: Mapping[str, Any]) -> list[str | ToolCallDelta]:
        """One stream chunk's text and tool-call deltas; its usage, model, choice and
        finish_reason noted in ``state`` (one of :data:`BAD_SHAPE` when malformed)."""
        raw = chunk.get("usage")
        if raw is not None:
            state.usage = usage_of(raw, OPENAI_USAGE) or state.usage
        state.model = chunk.get("model") or state.model
        items: list[str | ToolCallDelta] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, JSON_OBJECT) or choice.get("index", 0) != 0:
                continue
            state.saw_choice = True
            delta = choice.get("delta") or {}
            finish, refusal = choice.get("finish_reason"), delta.get("refusal")
            if finish == "content_filter" or refusal:
                refused = self._refused(finish, refusal)
                if refused is not None:
                    raise refused
            text = delta.get("content")
            if isinstance(text, str) and text:
                items.append(text)
                state.parts.append(text)
            if calls := delta.get("tool_calls"):
                items.extend(_call_deltas(calls))
            state.finish = finish or state.finish
        return items

    async def stream(self, request: Request) -> AsyncIterator[str | ToolCallDelta | Response]:
        """Yield text and tool-call deltas as they arrive (:data:`~orchestrator.PROGRESS`
        for a chunk with neither), then the final Response: as soon as the
        ``finish_reason`` and the usage have come (the content is complete; ``[DONE]``
        is still read, and its absence changes nothing), else at the end.

        Ends cleanly only on ``data: [DONE]`` or a ``finish_reason``; otherwise
        ``StreamInterrupted``.
        """
        state = _ChatStream()
        done = sent = False
        payload = self.payload(request, stream=True)
        events = await self.post_events(self._url, payload, plain=_plain(request))
        try:
            async for batch in events:
                for event in batch:
                    if event.data == "[DONE]" or sent:
                        done = True
                        break
                    chunk = (
                        await self.stream_event_off_loop(event)
                        if off_loop(event.data)
                        else self.stream_event(event)
                    )
                    items = self.parsed(self._read, state, chunk)
                    for item in items:
                        if not isinstance(item, str):
                            self.parsed(state.calls.add, item)
                        yield item
                    if not items:
                        yield PROGRESS
                    if state.finish is not None and state.usage is not None and state.saw_choice:
                        sent = True  # the content is complete: the Response goes out now
                        yield state.response(self, self.parsed(state.calls.calls))
                if done:
                    break
            if sent:
                return
            if not done and state.finish is None:
                raise self.unfinished(state.parts, "finish_reason or [DONE]")
            if not state.saw_choice:
                raise self.empty_stream("choices")
            calls = self.parsed(state.calls.calls)
        except InvalidOutput as error:
            self.bill(error, state.usage)  # the usage seen so far
            raise
        finally:  # now, not later by a task of the loop's (as an unclosed one would be)
            await events.aclose()
        yield state.response(self, calls)


class _ChatStream:
    """What a Chat Completions stream has said so far (:meth:`OpenAIChat._read` notes it)."""

    __slots__ = ("calls", "finish", "model", "parts", "saw_choice", "usage")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls = ToolCallAssembler()
        self.usage: Usage | None = None
        self.model: str | None = None
        self.finish: str | None = None
        self.saw_choice = False

    def response(self, provider: OpenAIChat, calls: tuple[ToolCall, ...]) -> Response:
        """The Response of the stream so far, with its assembled tool ``calls``."""
        return provider.response("".join(self.parts), self.usage, self.model, self.finish, calls)


def _plain(request: Request) -> bool:
    """Whether :meth:`OpenAIChat.payload` of ``request`` holds plain values only (as
    :func:`~providers.http.safe_json.json_body` takes them): what a request is validated
    to be (text, a positive int, tool calls' arguments as their JSON text), with no
    user mapping of any values (tools' parameters, a schema), no temperature but a
    finite float or an int, and stop sequences (not checked by ``Request``) exactly str."""
    t = request.temperature
    return (
        not request.tools
        and request.json_schema is None
        and (t is None or (type(t) in (float, int) and math.isfinite(t)))
        and (not request.stop or all(type(s) is str for s in request.stop))
    )


def _message(m: Message) -> dict[str, Any]:
    """One history message on the wire: assistant tool calls, tool results by id."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments_json(c)},
                }
                for c in m.tool_calls
            ],
        }
    return {"role": m.role, "content": m.content}


def _tool(tool: Tool) -> dict[str, Any]:
    function = {"name": tool.name, "parameters": dict(tool.parameters)}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


def _calls(raw: Any) -> tuple[ToolCall, ...]:
    """The ``message.tool_calls`` of a reply (arguments decoded from their JSON text)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_TOOL_CALLS:
        raise Missing(f"reply's tool_calls is not a list of at most {MAX_TOOL_CALLS} calls")
    out = []
    for item in raw:
        function = dig(item, "function")
        name = function.get("name")
        out.append(
            tool_call(item.get("id"), name, decode_arguments(name, function.get("arguments")))
        )
    return tuple(out)


def _call_deltas(raw: Any) -> list[ToolCallDelta]:
    """The tool-call deltas of one stream chunk's ``delta.tool_calls``."""
    if not raw:
        return []
    out = []
    for item in raw:
        function = item.get("function") or {}
        arguments = function.get("arguments")
        out.append(
            ToolCallDelta(
                int(item["index"]),
                item.get("id") or None,
                function.get("name") or None,
                arguments if isinstance(arguments, str) else "",
            )
        )
    return out


# -- the chain file's ``type: openai`` ---------------------------------------------


class OpenAISpec(VendorSpec):
    """``type: openai`` in a chain file: an :class:`OpenAIChat`."""

    order = 10
    key_env = OpenAIChat.env_vars[0]
    type: Literal["openai"]
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None

    def build(self, ctx: BuildContext) -> OpenAIChat:
        return OpenAIChat(
            self.model,
            name=ctx.name,
            **self.vendor_kwargs(),
            **given(max_tokens_param=self.max_tokens_param),
        )
