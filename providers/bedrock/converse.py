"""The Bedrock Converse wire: the request body, a whole reply, and the stream's events.

Text, system prompts and multi-turn histories are content blocks
(``{"text": ...}``); tools go in ``toolConfig`` and come back as ``toolUse`` blocks,
their results as ``toolResult`` blocks of one user turn. Structured output is a
single forced tool named after the schema, as for Anthropic: its ``toolUse.input``
is the answer. ``cachePoint`` blocks mark where a prompt cache may end (after the
system prompt, the tools, the history) when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from orchestrator.types import Request, ToolCall, ToolCallDelta, Usage
from providers.http.shape import Missing, dig, schema_name
from providers.http.tools import ToolUses, ToolUseStream
from providers.http.usage import BEDROCK
from providers.http.usage import usage_of as reported_usage

__all__ = [
    "CACHE_POINTS",
    "GUARDRAIL_STOPS",
    "ConverseStream",
    "converse_body",
    "read_reply",
    "usage_of",
]

#: Where ``cache_points=`` may put a ``cachePoint`` block.
CACHE_POINTS = frozenset({"system", "tools", "messages"})
#: Stop reasons that mean the platform's guardrail or filter refused.
GUARDRAIL_STOPS = frozenset({"guardrail_intervened", "content_filtered"})
_CACHE = {"cachePoint": {"type": "default"}}
_CHOICES: dict[str, dict[str, Any]] = {"auto": {"auto": {}}, "required": {"any": {}}}


def _turns(request: Request, system: list[str]) -> list[dict[str, Any]]:
    """The history as Converse turns: tool calls as ``toolUse`` blocks, consecutive
    tool results merged into one user turn (system text goes to ``system``)."""
    turns: list[dict[str, Any]] = []
    for m in request.messages:
        if m.role == "system":
            system.append(m.content)
            continue
        blocks: list[dict[str, Any]]
        if m.role == "tool":
            block: dict[str, Any] = {
                "toolResult": {"toolUseId": m.tool_call_id, "content": [{"text": m.content}]}
            }
            role, blocks = "user", [block]
        else:
            role = "assistant" if m.role == "assistant" else "user"
            blocks = [{"text": m.content}] if m.content else []
            blocks += [
                {"toolUse": {"toolUseId": c.id, "name": c.name, "input": dict(c.arguments)}}
                for c in m.tool_calls
            ]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)  # Converse wants the roles to alternate
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _tool_config(request: Request, cache: bool) -> tuple[dict[str, Any] | None, str | None]:
    """``toolConfig`` (None without tools) and the answer tool's name (None without a schema).

    With a schema and tools the model must call one (``any``): a tool to go on, or
    the answer tool to answer; ``tool_choice="none"`` forces the answer.
    """
    tools = [
        {"toolSpec": {"name": t.name, "description": t.description or t.name,
                      "inputSchema": {"json": dict(t.parameters)}}}
        for t in request.tools
    ]  # fmt: skip
    choice, answer = request.tool_choice, None
    if request.json_schema is not None:
        answer = schema_name(request.schema_name)
        while any(t["toolSpec"]["name"] == answer for t in tools):
            answer = f"{answer[:60]}_out"
        spec = {"name": answer, "description": "Give the answer as this tool's input.",
                "inputSchema": {"json": dict(request.json_schema)}}  # fmt: skip
        tools.append({"toolSpec": spec})
    if not tools:
        return None, None
    config: dict[str, Any] = {"tools": tools + ([_CACHE] if cache else [])}
    wire = _CHOICES.get(choice or "auto", {"tool": {"name": choice}})
    if answer is not None and (not request.tools or choice == "none"):
        wire = {"tool": {"name": answer}}
    elif answer is not None:
        wire = {"any": {}}
    if choice not in (None, "none") or answer is not None:
        config["toolChoice"] = wire
    return config, answer


def converse_body(
    request: Request, max_tokens: int | None, cache_points: Iterable[str] = ()
) -> tuple[dict[str, Any], str | None]:
    """The Converse request body, and the answer tool's name for structured output."""
    system = [request.system] if request.system else []
    turns = _turns(request, system)
    points = set(cache_points)
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = [{"text": s} for s in system] + ([_CACHE] if "system" in points else [])
    if "messages" in points and turns:
        turns[-1]["content"].append(dict(_CACHE))
    config: dict[str, Any] = {}
    if request.max_tokens or max_tokens:
        config["maxTokens"] = request.max_tokens or max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop:
        config["stopSequences"] = list(request.stop)
    if config:
        body["inferenceConfig"] = config
    tool_config, answer = _tool_config(request, "tools" in points)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    return body, answer


def usage_of(data: Any) -> Usage | None:
    """The ``usage`` a reply or ``metadata`` event reports (None without one); its
    ``inputTokens`` leave out the cache reads and writes, which ``Usage`` counts in."""
    return reported_usage(data.get("usage") if isinstance(data, Mapping) else None, BEDROCK)


def read_reply(data: Any, answer: str | None) -> tuple[str, tuple[ToolCall, ...]]:
    """The text (or structured answer's JSON) and tool calls of a Converse reply."""
    content = dig(data, "output", "message", "content")
    if not isinstance(content, list):
        raise Missing("reply has no output.message.content list")
    texts: list[str] = []
    uses = ToolUses(answer)
    for block in content:
        use = block.get("toolUse") if isinstance(block, Mapping) else None
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(use, Mapping):
            uses.add(use.get("toolUseId"), use.get("name"), use.get("input"))
    return uses.reply("".join(texts), "toolUse")


class ConverseStream(ToolUseStream):
    """What a ConverseStream has said so far; :meth:`read` takes one event."""

    def __init__(self, answer: str | None) -> None:
        super().__init__(answer)
        self.usage: Usage | None = None
        self.ended = False  # messageStop seen

    def read(self, kind: str, data: Mapping[str, Any]) -> str | ToolCallDelta | None:
        """The text or tool-call delta one event carries, if any (bookkeeping the rest)."""
        if kind == "contentBlockStart":
            start = dig(data, "start", what="stream event")
            return self._start(data.get("contentBlockIndex"), start.get("toolUse"))
        if kind == "contentBlockDelta":
            delta = dig(data, "delta", what="stream event")
            return self._delta(data.get("contentBlockIndex"), delta)
        if kind == "messageStop":
            self.stop = data.get("stopReason") or self.stop
            self.ended = True
        elif kind == "metadata":
            self.usage = usage_of(data) or self.usage
        return None

    def _start(self, index: Any, use: Any) -> ToolCallDelta | None:
        if not isinstance(use, Mapping):
            return None
        return self.start_tool(index, use.get("toolUseId"), use.get("name"))

    def _delta(self, index: Any, delta: Mapping[str, Any]) -> str | ToolCallDelta | None:
        block = self.blocks.get(index)
        use = delta.get("toolUse")
        piece = use.get("input") if isinstance(use, Mapping) else delta.get("text")
        if not isinstance(piece, str) or not piece:
            return None
        if isinstance(block, int):
            return self.calls.add(ToolCallDelta(block, arguments=piece))
        if block == "answer" or (isinstance(use, Mapping) and self.answer is not None):
            self.parts.append(piece)
            return piece
        if isinstance(use, Mapping):
            return None  # input of a tool block never started: nothing to add it to
        self.parts.append(piece)
        return piece
