"""What a conversation is made of: ``Message`` and the tool-calling values.

``Message`` is one chat turn; ``Tool`` is a function the model may call,
``ToolCall`` a call it made and ``ToolCallDelta`` a streamed piece of one. Each
validates itself once, at construction. ``Request`` (in :mod:`orchestrator.types`)
is built from them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.frozen import slot_init
from orchestrator.keywords import not_a_tool_call

__all__ = ["TOOL_CHOICES", "Message", "Tool", "ToolCall", "ToolCallDelta"]

_ROLES = ("user", "assistant", "system", "tool")


def check_text(owner: str, text: str) -> None:
    """Refuse what is not a ``str`` (``TypeError``) and text that is not valid Unicode: a
    lone surrogate cannot be sent as UTF-8.

    Lone surrogates are what Python makes of undecodable bytes (``surrogateescape``
    on argv, stdin or file names). Refusing them here, once, means no provider
    sends invalid UTF-8 or fails halfway through a chain; the caller decides
    how to decode (``errors="replace"`` is what the ``failover`` CLI does).
    """
    if not isinstance(text, str):
        raise TypeError(f"{owner}: expected str, got {type(text).__name__}")
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{owner}: lone surrogate U+{ord(text[exc.start]):04X} at index {exc.start} is not "
            "valid Unicode text (undecodable input?); decode it with errors='replace'"
        ) from None


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: The tool choices every vendor understands; any other string names one tool.
TOOL_CHOICES = ("auto", "required", "none")


def _check_tool_name(owner: str, name: object) -> None:
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"{owner}: {name!r} is not a tool name (1-64 letters, digits, '_' or '-', "
            "the rule every vendor shares)"
        )


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call: ``name``, what it does, and its arguments' JSON schema.

    ``parameters`` is a JSON schema for an object (``{"type": "object",
    "properties": {...}, "required": [...]}``); the tool call's arguments are
    validated against it, so a reply whose arguments do not match is
    ``InvalidOutput`` (retried, then handed over).
    """

    name: str
    description: str = ""
    # A plain dict (copied on construction) so requests pickle and deep-copy.
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}, hash=False
    )

    def __post_init__(self) -> None:
        _check_tool_name("Tool.name", self.name)
        if not isinstance(self.description, str):
            raise TypeError(
                f"Tool.description: expected str, got {type(self.description).__name__}"
            )
        if not isinstance(self.parameters, Mapping):
            raise TypeError(
                "Tool.parameters: expected a JSON schema dict, "
                f"got {type(self.parameters).__name__}"
            )
        object.__setattr__(self, "parameters", dict(self.parameters))
        kind = self.parameters.get("type", "object")
        if kind != "object":
            raise ValueError(f"Tool.parameters: the schema's type must be 'object', got {kind!r}")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for: its ``id`` (the tool message echoes it), name and arguments.

    ``arguments`` is the decoded JSON object. Vendors that give no id (Gemini)
    get one made up by the provider, unique within the reply.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"ToolCall.id: expected a non-empty str, got {self.id!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ToolCall.name: expected a non-empty str, got {self.name!r}")
        if not isinstance(self.arguments, Mapping):
            raise TypeError(
                f"ToolCall.arguments: expected a dict, got {type(self.arguments).__name__}"
            )
        object.__setattr__(self, "arguments", dict(self.arguments))

    def __repr__(self) -> str:
        # Arguments may hold personal data: show their keys, not their values.
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={sorted(self.arguments)})"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as a stream delivers it (``StreamingProvider.stream`` may yield it).

    ``index`` tells the calls of one reply apart; ``id`` and ``name`` come with a
    call's first delta, ``arguments`` is the next fragment of its JSON text. It
    counts as content for first-token and idle deadlines; the assembled calls are
    in the final :class:`Response`'s ``tool_calls``.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@slot_init
@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: ``role`` is user, assistant, system or tool; ``content`` is text.

    An assistant message may carry the ``tool_calls`` the model made (its
    ``content`` may then be ""); a ``tool`` message answers one of them and names
    it in ``tool_call_id``.
    """

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"Message.role: {self.role!r} is not one of {', '.join(_ROLES)}")
        check_text("Message.content", self.content)
        if self.tool_calls:
            calls = tuple(self.tool_calls)
            if self.role != "assistant":
                raise ValueError(
                    f"Message.tool_calls: only an assistant message has them, not {self.role!r}"
                )
            for c in calls:
                if not isinstance(c, ToolCall):
                    raise TypeError(f"Message.tool_calls: {not_a_tool_call(c)}")
            object.__setattr__(self, "tool_calls", calls)
        if self.role == "tool":
            if not isinstance(self.tool_call_id, str) or not self.tool_call_id:
                raise ValueError(
                    "Message: a 'tool' message needs tool_call_id= "
                    "(the id of the ToolCall it answers)"
                )
        elif self.tool_call_id is not None:
            raise ValueError(
                f"Message.tool_call_id: only a 'tool' message has one, not {self.role!r}"
            )


def to_messages(messages: Iterable[Message | Mapping[str, Any]]) -> tuple[Message, ...]:
    out = []
    for i, m in enumerate(messages):
        if isinstance(m, Message):
            out.append(m)
        elif isinstance(m, Mapping):
            if "role" not in m or "content" not in m:
                raise ValueError(
                    f"Request.messages[{i}]: needs 'role' and 'content' keys, got {sorted(m)}"
                )
            out.append(
                Message(
                    str(m["role"]),
                    m["content"],
                    tool_calls=tuple(_to_tool_call(c) for c in m.get("tool_calls") or ()),
                    tool_call_id=m.get("tool_call_id"),
                )
            )
        else:
            raise TypeError(
                f"Request.messages[{i}]: expected a dict or Message, got {type(m).__name__}"
            )
    return tuple(out)


def _to_tool_call(call: Any) -> Any:
    if isinstance(call, Mapping) and "id" in call and "name" in call:
        return ToolCall(call["id"], call["name"], call.get("arguments") or {})
    return call  # a ToolCall; Message says what is wrong with anything else


def to_tools(tools: Iterable[Tool | Mapping[str, Any]]) -> tuple[Tool, ...]:
    out: list[Tool] = []
    for i, t in enumerate(tools):
        if isinstance(t, Mapping):
            t = Tool(t["name"], t.get("description", ""), t.get("parameters") or {"type": "object"})
        if not isinstance(t, Tool):
            raise TypeError(f"Request.tools[{i}]: expected a Tool or dict, got {type(t).__name__}")
        out.append(t)
    from orchestrator.tools import check_tools  # only requests with tools pay the import

    check_tools(out)  # hostile schemas (a $ref URL, a lookaround) are refused here, once
    return tuple(out)
