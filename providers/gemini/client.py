"""``GeminiGenerate``: the Gemini API ``generateContent`` / ``streamGenerateContent``.

``POST {base_url}/v1beta/models/{model}:generateContent`` (and
``:streamGenerateContent?alt=sse``) with the key in ``x-goog-api-key``.
Structured output uses ``responseMimeType: application/json`` and a
``responseSchema`` translated to Gemini's dialect; a trailing assistant
message is sent as a ``model`` turn to continue from. Tools and tool history:
:mod:`providers.gemini.tools`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal, Unpack

from orchestrator import PROGRESS
from orchestrator.config.spec import BuildContext
from orchestrator.errors import GuardrailTriggered, InvalidOutput, ProviderError
from orchestrator.secrets import Secret
from orchestrator.types import Request, Response, ToolCall, ToolCallDelta, Usage
from providers.gemini.schema import gemini_schema
from providers.gemini.tools import contents, function_calls, tool_fields
from providers.http.base import (
    Missing,
    VendorProvider,
    VendorSettings,
    dig,
    join_url,
    off_loop,
)
from providers.http.errors import map_gemini_error
from providers.http.spec import VendorSpec
from providers.http.tools import arguments_json
from providers.http.usage import GEMINI as GEMINI_USAGE
from providers.http.usage import usage_of

__all__ = ["GeminiGenerate", "GeminiSpec"]

_BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
    }
)


def _usage(data: Mapping[str, Any]) -> Usage | None:
    return usage_of(data.get("usageMetadata"), GEMINI_USAGE)


def _text(parts: Any) -> str:
    if not isinstance(parts, list):
        raise Missing("reply has no candidates[0].content.parts list")
    return "".join(
        str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and not p.get("thought")
    )


def _first_candidate(data: Mapping[str, Any], calls: int) -> tuple[str | None, Any, list[ToolCall]]:
    """(the text of a stream chunk's ``candidates[0].content``, None when it has none;
    its ``finishReason``; its function calls, numbered on from ``calls``)."""
    candidates = data.get("candidates")
    candidate = candidates[0] if isinstance(candidates, list) and candidates else {}
    if not isinstance(candidate, Mapping):
        return None, None, []
    content = candidate.get("content")
    text = None
    found: list[ToolCall] = []
    if isinstance(content, Mapping) and "parts" in content:
        text = _text(content["parts"])
        found = function_calls(content["parts"], calls)
    return text, candidate.get("finishReason"), found


class GeminiGenerate(VendorProvider):
    """A Gemini model over the Gemini API (Google AI Studio keys).

    ``GeminiGenerate("gemini-2.5-flash")`` reads ``GEMINI_API_KEY``, then
    ``GOOGLE_API_KEY``, at call time; built without ``base_url=``, it uses
    ``GOOGLE_GEMINI_BASE_URL``, then ``GEMINI_BASE_URL``, when set. The key goes in
    ``x-goog-api-key`` (never in the URL), only over https or to loopback unless
    ``allow_insecure_http=True``.
    """

    family = "gemini"
    window_counts_output = False  # Gemini's window is of input tokens; output has its own limit
    env_vars: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_url_vars: ClassVar[tuple[str, ...]] = ("GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL")
    default_base_url = "https://generativelanguage.googleapis.com"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        **settings: Unpack[VendorSettings],
    ) -> None:
        model_id = model.removeprefix("models/") if isinstance(model, str) else model
        super().__init__(model_id, base_url=base_url, **settings)
        root = f"/v1beta/models/{self.model}"
        self._url = join_url(self.base_url, f"{root}:generateContent")
        self._stream_url = join_url(self.base_url, f"{root}:streamGenerateContent?alt=sse")

    def auth_headers(self, key: Secret) -> dict[str, str]:
        return {"x-goog-api-key": key.reveal()}

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        return map_gemini_error(status, headers, body, provider=self.name, key=self.secrets())

    def payload(self, request: Request) -> dict[str, Any]:
        """The generateContent request body for ``request``."""
        system = [request.system] if request.system else []
        body: dict[str, Any] = {"contents": contents(request, system, self.name)}
        body.update(tool_fields(request))
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        config: dict[str, Any] = {}
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if request.json_schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseSchema"] = gemini_schema(request.json_schema)
        if config:
            body["generationConfig"] = config
        return body

    def _check_blocked(self, data: Mapping[str, Any]) -> None:
        feedback = data.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        if reason:
            raise GuardrailTriggered(f"prompt blocked (blockReason={reason})", provider=self.name)
        candidates = data.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        finish = first.get("finishReason") if isinstance(first, Mapping) else None
        if finish in _BLOCKED:
            raise GuardrailTriggered(f"reply blocked (finishReason={finish})", provider=self.name)

    def parse(self, data: Any) -> Response:
        """The Response for a generateContent reply (raises on a block or a missing field)."""
        if not isinstance(data, Mapping):
            raise Missing("reply is not a JSON object")
        self._check_blocked(data)
        candidate = dig(data, "candidates", 0)
        parts = dig(data, "candidates", 0, "content", "parts")
        text = _text(parts)
        calls = tuple(function_calls(parts))
        finish = candidate.get("finishReason")
        return self.response(text, _usage(data), data.get("modelVersion"), finish, calls)

    async def complete(self, request: Request) -> Response:
        """One generateContent call; every failure raised as an ``orchestrator.errors`` class."""
        data = await self.post_json(self._url, self.payload(request))
        return self.parsed_reply(self.parse, data)

    def reply_usage(self, data: Any) -> Usage | None:
        return _usage(data) if isinstance(data, Mapping) else None

    async def stream(self, request: Request) -> AsyncIterator[str | ToolCallDelta | Response]:
        """Yield text as it arrives (and each function call, whole, as one tool-call
        delta; :data:`~orchestrator.PROGRESS` for a chunk with neither), then the final
        Response as soon as a chunk carries ``finishReason`` (the content is complete:
        the body's end is still read, and a late one changes nothing).

        Ends cleanly only when a chunk carries ``finishReason``; otherwise
        ``StreamInterrupted``.
        """
        parts: list[str] = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        model: str | None = None
        finish: str | None = None
        saw_content = stopped = False
        events = await self.post_events(self._stream_url, self.payload(request))
        try:
            async for batch in events:
                for event in batch:
                    if finish is not None:
                        stopped = True
                        break  # after the Response: nothing more is read
                    data = (
                        await self.stream_event_off_loop(event)
                        if off_loop(event.data)
                        else self.stream_event(event)
                    )
                    self.parsed(self._check_blocked, data)
                    usage = self.parsed(_usage, data) or usage
                    model = data.get("modelVersion") or model
                    text, finish, found = self.parsed(_first_candidate, data, len(calls))
                    saw_content = saw_content or text is not None
                    if text:
                        parts.append(text)
                        yield text
                    for call in found:
                        calls.append(call)
                        yield ToolCallDelta(
                            len(calls) - 1, call.id, call.name, arguments_json(call)
                        )
                    if not text and not found:
                        yield PROGRESS
                    if finish is not None:
                        yield self._final(parts, usage, model, finish, calls, saw_content)
                if stopped:
                    break
            if finish is None:
                raise self.unfinished(parts, "finishReason")
        except InvalidOutput as error:
            self.bill(error, usage)  # the usage seen so far
            raise
        finally:  # now, not later by a task of the loop's (as an unclosed one would be)
            await events.aclose()

    def _final(
        self,
        parts: list[str],
        usage: Usage | None,
        model: str | None,
        finish: str,
        calls: list[ToolCall],
        saw_content: bool,
    ) -> Response:
        """The Response of a stream that gave its ``finishReason``."""
        if not saw_content:
            raise self.empty_stream("candidates[0].content")
        return self.response("".join(parts), usage, model, finish, tuple(calls))


# -- the chain file's ``type: gemini`` ---------------------------------------------


class GeminiSpec(VendorSpec):
    """``type: gemini`` in a chain file: a :class:`GeminiGenerate`."""

    order = 30
    key_env = GeminiGenerate.env_vars[0]
    type: Literal["gemini"]

    def build(self, ctx: BuildContext) -> GeminiGenerate:
        return GeminiGenerate(self.model, name=ctx.name, **self.vendor_kwargs())
