"""Tool calls on the wire, what every vendor shares: decoding arguments, assembling streams.

Each vendor module translates tools and history to its own format; this module
turns what comes back into :class:`~orchestrator.types.ToolCall` values. Argument
text is parsed with the bounded, linear-time :func:`parse_json`; text that is not
a JSON object raises :class:`~providers.http.base.Missing` (the provider's
``parsed`` makes it ``InvalidOutput``) naming the tool, never quoting the text.
Whether the arguments match the tool's schema is the engine's check
(:mod:`orchestrator.tools`), done once for every provider.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from orchestrator.types import Request, ToolCall, ToolCallDelta
from providers.http.base import Missing
from providers.http.safe_json import parse_json

__all__ = [
    "MAX_TOOL_CALLS",
    "ToolCallAssembler",
    "ToolUseStream",
    "ToolUses",
    "arguments_json",
    "decode_arguments",
    "made_up_id",
    "tool_call",
    "tool_names_by_id",
]

#: More calls than this in one reply is not a reply: ``InvalidOutput``.
MAX_TOOL_CALLS = 128


def decode_arguments(name: str, text: Any) -> dict[str, Any]:
    """The arguments object of a call of ``name`` from its JSON text ("" is ``{}``)."""
    if not isinstance(text, str):
        raise Missing(f"tool call {name!r} arguments are not a JSON string")
    if not text.strip():
        return {}
    try:
        value = parse_json(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise Missing(f"tool call {name!r} arguments are not a JSON object")
    return value


def arguments_json(call: ToolCall) -> str:
    """A call's arguments as the JSON text OpenAI's wire carries."""
    return json.dumps(dict(call.arguments), ensure_ascii=False)


def tool_call(call_id: Any, name: Any, arguments: Mapping[str, Any] | Any) -> ToolCall:
    """A :class:`ToolCall` from a reply's fields (``Missing`` when one is absent)."""
    if not isinstance(name, str) or not name:
        raise Missing("reply has a tool call without a name")
    if not isinstance(call_id, str) or not call_id:
        raise Missing(f"reply has a call of tool {name!r} without an id")
    if not isinstance(arguments, Mapping):
        raise Missing(f"tool call {name!r} arguments are not a JSON object")
    return ToolCall(call_id, name, arguments)


def made_up_id(index: int, name: str, arguments: Mapping[str, Any]) -> str:
    """An id for a vendor that gives none (Gemini): unique within a reply (``index``),
    the same for the same call (a digest of name and arguments) so retries agree."""
    text = json.dumps([name, arguments], sort_keys=True, default=str)
    digest = hashlib.blake2s(text.encode(), digest_size=6).hexdigest()
    return f"call_{index}_{digest}"


def tool_names_by_id(request: Request) -> dict[str, str]:
    """Every earlier assistant tool call's id -> its tool name (for wires that name
    the function a result answers, not the call: Gemini)."""
    return {c.id: c.name for m in request.messages for c in m.tool_calls}


class ToolCallAssembler:
    """Tool calls of one streamed reply, put together from their deltas by ``index``."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        # index -> [id, name, argument fragments]
        self._calls: dict[int, list[Any]] = {}

    def add(self, delta: ToolCallDelta) -> ToolCallDelta:
        """Take one delta (returned, to be yielded on); ``Missing`` past :data:`MAX_TOOL_CALLS`."""
        entry = self._calls.get(delta.index)
        if entry is None:
            if len(self._calls) >= MAX_TOOL_CALLS:
                raise Missing(f"stream has more than {MAX_TOOL_CALLS} tool calls")
            entry = self._calls[delta.index] = [None, None, []]
        entry[0] = delta.id or entry[0]
        entry[1] = delta.name or entry[1]
        if delta.arguments:
            entry[2].append(delta.arguments)
        return delta

    def __bool__(self) -> bool:
        return bool(self._calls)

    def calls(self) -> tuple[ToolCall, ...]:
        """The assembled calls in index order (``Missing`` for one without id or name,
        or whose arguments are not a JSON object)."""
        out = []
        for index in sorted(self._calls):
            call_id, name, parts = self._calls[index]
            if not isinstance(name, str):
                raise Missing(f"stream has tool call #{index} without a name")
            out.append(tool_call(call_id, name, decode_arguments(name, "".join(parts))))
        return tuple(out)


class ToolUses:
    """A whole reply's tool-use blocks (Anthropic's ``tool_use``, Bedrock's ``toolUse``):
    the input of the tool named ``answer`` (the first one given) is the structured
    output; every other block is a tool call."""

    __slots__ = ("answer", "calls", "given")

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.calls: list[ToolCall] = []
        self.given: Any = None

    def add(self, call_id: Any, name: Any, arguments: Any) -> None:
        """One block: the structured answer's input, or a call (``Missing`` when malformed)."""
        if self.answer is not None and name == self.answer:
            self.given = arguments if self.given is None else self.given
        else:
            self.calls.append(tool_call(call_id, name, arguments))

    def reply(self, text: str, block: str) -> tuple[str, tuple[ToolCall, ...]]:
        """The reply's text (the structured answer's JSON when one was given) and calls;
        ``Missing`` past :data:`MAX_TOOL_CALLS`, or when the structured answer was asked
        for and neither it nor a call came (``block`` names the wire's block type)."""
        if len(self.calls) > MAX_TOOL_CALLS:
            raise Missing(f"reply has more than {MAX_TOOL_CALLS} tool calls")
        if self.given is not None:
            return json.dumps(self.given), tuple(self.calls)
        if self.answer is not None and not self.calls:
            raise Missing(f"reply has no {block} block with an input (structured output)")
        return text, tuple(self.calls)


class ToolUseStream:
    """What a stream of content blocks (Anthropic's, Bedrock's) has said so far: the text
    ``parts``, the calls, and each block's index -> ``"text"``, ``"answer"`` (the
    structured output's tool, whose input streams as the text) or its call's number."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.parts: list[str] = []
        self.calls = ToolCallAssembler()
        self.blocks: dict[Any, str | int] = {}
        self.tools = 0  # tool-use blocks (not the answer's) so far
        self.stop: str | None = None

    def start_tool(self, index: Any, call_id: Any, name: Any) -> ToolCallDelta | None:
        """A tool-use block starts at ``index``: the answer's, or the next call (its delta)."""
        if self.answer is not None and name == self.answer:
            self.blocks[index] = "answer"
            return None
        number, self.tools = self.tools, self.tools + 1
        self.blocks[index] = number
        return self.calls.add(ToolCallDelta(number, call_id, name))
