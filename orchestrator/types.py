"""The values that travel through a chain and the interface every child implements.

``Request``, ``Response`` and ``Usage`` go in and out of providers (``Message``
and the tool-calling values live in :mod:`orchestrator.messages` and are
re-exported here); ``Attempt`` records one call; ``Result`` and ``Stop`` are what a run returns;
``Provider`` / ``StreamingProvider`` are the protocols a child satisfies.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Protocol, runtime_checkable

from typing_extensions import TypeVar

from orchestrator.frozen import slot_filler, slot_init
from orchestrator.messages import (
    TOOL_CHOICES,
    Message,
    Tool,
    ToolCall,
    ToolCallDelta,
    check_text,
    to_messages,
    to_tools,
)
from orchestrator.usage import Usage

__all__ = [
    "REASONS",
    "TOOL_CHOICES",
    "Attempt",
    "Message",
    "Provider",
    "Request",
    "Response",
    "Result",
    "Stop",
    "StreamingProvider",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
]


#: The metadata of a request given none: one read-only view, shared (nothing can change it).
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Request:
    """What to ask: ``Request(prompt=...)`` or ``Request(messages=[...], system=...)``.

    Immutable: use :meth:`replace` for a changed copy. ``prompt`` is the last
    user message's text. Generation options (``max_tokens``, ``temperature``,
    ``stop``) and ``json_schema`` (set by the engine for ``schema=``) travel
    with it; ``metadata`` is free-form and never sent to providers.
    ``tools`` are the functions the model may call; ``tool_choice`` is
    ``"auto"`` (the default when tools are given), ``"required"``, ``"none"``
    or the name of one of the tools.
    """

    messages: tuple[Message, ...] = ()
    system: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    json_schema: Mapping[str, Any] | None = None
    schema_name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    tools: tuple[Tool, ...] = ()
    tool_choice: str | None = None

    def __init__(
        self,
        prompt: str | None = None,
        *,
        messages: Iterable[Message | Mapping[str, Any]] | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Iterable[str] = (),
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tools: Iterable[Tool | Mapping[str, Any]] = (),
        tool_choice: str | None = None,
    ) -> None:
        msgs = to_messages(messages) if messages else ()
        tool_list = to_tools(tools) if tools else ()  # most requests carry none
        if tool_choice is not None:
            if not tool_list:
                raise ValueError("Request.tool_choice: given without tools=[...]")
            if tool_choice not in TOOL_CHOICES and tool_choice not in {t.name for t in tool_list}:
                raise ValueError(
                    f"Request.tool_choice: {tool_choice!r} is not one of {', '.join(TOOL_CHOICES)} "
                    f"or a tool name ({', '.join(t.name for t in tool_list)})"
                )
        if prompt is not None:
            if not isinstance(prompt, str):
                raise TypeError(f"Request.prompt: expected str, got {type(prompt).__name__}")
            msgs = (*msgs, Message("user", prompt))
        if not msgs:
            raise ValueError("Request: give prompt='...' or a non-empty messages=[...]")
        if system is not None:
            check_text("Request.system", system)
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValueError(f"Request.max_tokens: {max_tokens!r} must be a positive int")
        _fill_request(
            self,
            msgs,
            system,
            max_tokens,
            temperature,
            tuple(stop),
            json_schema,
            schema_name,
            MappingProxyType(dict(metadata)) if metadata else _NO_METADATA,
            tool_list,
            tool_choice,
        )

    @property
    def prompt(self) -> str:
        """The last user message's text ("" when there is none)."""
        for m in reversed(self.messages):
            if m.role == "user":
                return m.content
        return ""

    def replace(self, *, prompt: str | None = None, **changes: Any) -> Request:
        """A changed copy; ``prompt=`` replaces the last user message's text."""
        messages = changes.pop("messages", self.messages)
        msgs = list(to_messages(messages))
        if prompt is not None:
            for i in range(len(msgs) - 1, -1, -1):
                if msgs[i].role == "user":
                    msgs[i] = Message("user", prompt)
                    break
            else:
                msgs.append(Message("user", prompt))
        current = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "messages"
        }
        unknown = set(changes) - set(current)
        if unknown:
            raise TypeError(
                f"Request.replace: unknown field(s) {sorted(unknown)}; "
                f"allowed: prompt, messages, {', '.join(sorted(current))}"
            )
        current.update(changes)
        return Request(messages=msgs, **current)

    def _fields(self) -> dict[str, Any]:
        return {
            "messages": list(self.messages),
            "system": self.system,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": self.stop,
            "json_schema": None if self.json_schema is None else dict(self.json_schema),
            "schema_name": self.schema_name,
            "metadata": dict(self.metadata),
            "tools": list(self.tools),
            "tool_choice": self.tool_choice,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_request, (self._fields(),))

    def __deepcopy__(self, memo: dict[int, Any]) -> Request:
        return _rebuild_request(copy.deepcopy(self._fields(), memo))

    def __repr__(self) -> str:
        # Prompts may hold personal data: reprs show sizes, not text.
        chars = sum(len(m.content) for m in self.messages)
        return f"Request(messages={len(self.messages)}, chars={chars})"


#: Sets a Request's fields in order (its ``__init__`` validates them first).
_fill_request = slot_filler(Request)


def _rebuild_request(fields: dict[str, Any]) -> Request:
    return Request(**fields)


@slot_init
@dataclass(frozen=True, slots=True)
class Response:
    """What a provider returns: the text, token usage, cost and the model that answered.

    ``tool_calls`` holds the calls the model made (``text`` may then be "").
    """

    text: str
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    cost_usd: float | None = None
    tool_calls: tuple[ToolCall, ...] = ()


# -- the record of one call ---------------------------------------------------
#: Why a child was left (``Attempt.reason``): the documented set.
REASONS = frozenset(
    {
        "error",
        "timeout",
        "rate_limited",
        "overloaded",
        "unusable",
        "invalid_output",
        "rejected",
        "circuit_open",
        "at_capacity",
        "budget",
        "deadline",
        "terminal",
        "unsupported",
        "context_window",
        "hedge_lost",
        "cancelled",
    }
)


@slot_init
@dataclass(frozen=True, slots=True)
class Attempt:
    """One call to one provider: who, which try, when, how long, and how it ended.

    ``error`` is ``None`` for the attempt that succeeded. ``started_at`` is wall
    time (seconds since the epoch, from the agent's clock); ``duration`` seconds.
    ``reason`` says why the attempt failed (one of :data:`REASONS`), ``note``
    adds detail such as ``"retry budget empty"``; neither holds request text.
    """

    agent: str
    error: BaseException | None
    attempt_number: int
    started_at: float
    duration: float
    reason: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.reason is None

    @property
    def unpriced(self) -> bool:
        """Billed (it reported tokens, or it answered) at a cost nobody knows: no price."""
        return self.cost_usd is None and (self.usage is not None or self.ok)

    def kind_label(self) -> str:
        """The error's type name, or the reason when there is no error object."""
        if self.error is not None:
            return type(self.error).__name__
        return self.reason or "ok"


@slot_init
@dataclass(frozen=True, slots=True)
class Stop:
    """Returned by ``before_fallback`` to end the run without calling the next child."""

    text: str = ""
    reason: str = "stopped"


#: What ``Result.value`` holds: the ``schema=`` type (``Any`` for a bare ``Result``).
ValueT = TypeVar("ValueT", default=Any)


@slot_init
@dataclass(frozen=True, slots=True)
class Result(Generic[ValueT]):
    """A successful run: the text, who answered, and every attempt (the winning one last).

    ``handled_by`` is the name of the provider that actually answered (inside
    nested chains too); it is ``None`` only when ``stopped`` or ``best_effort``
    produced the text. ``value`` holds the validated object when ``schema=`` was
    given (typed: ``run(p, schema=Review)`` returns ``Result[Review]``; None when ``stopped``
    or ``best_effort`` produced the text). ``usage`` and ``cost_usd`` sum every attempt that
    reported them. ``tool_calls``: the calls the model asked for (``text`` may be "").
    ``order``: the children in the order the run tried them; ``arm``: the
    :class:`~orchestrator.Split` arm the call was assigned to (or None)."""

    text: str
    handled_by: str | None
    attempts: tuple[Attempt, ...]
    latency: float
    # None at run time without a schema, and when stopped or best_effort produced the
    # text (opt-in paths whose code knows it); typed as the schema so ``value.field`` reads.
    value: ValueT = None  # type: ignore[assignment]
    model: str | None = None
    stopped: Stop | None = None
    best_effort: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    order: tuple[str, ...] = ()
    arm: str | None = None

    @property
    def usage(self) -> Usage | None:
        """Tokens summed over every attempt that reported usage (failed ones included)."""
        total: Usage | None = None
        for a in self.attempts:
            if a.usage is not None:
                total = a.usage if total is None else total + a.usage
        return total

    @property
    def cost_usd(self) -> float | None:
        """Cost summed over every attempt that consumed priced tokens: a lower bound when
        :attr:`unpriced_attempts` is not empty."""
        costs = [a.cost_usd for a in self.attempts if a.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def unpriced_attempts(self) -> tuple[Attempt, ...]:
        """The billed attempts whose cost is unknown (no price), left out of ``cost_usd``."""
        return tuple(a for a in self.attempts if a.unpriced)

    @property
    def failed_attempts(self) -> tuple[Attempt, ...]:
        return tuple(a for a in self.attempts if a.error is not None or a.reason is not None)

    def __repr__(self) -> str:
        return (
            f"Result(handled_by={self.handled_by!r}, attempts={len(self.attempts)}, "
            f"latency={self.latency:.3f}, chars={len(self.text)})"
        )


# -- the provider interface ----------------------------------------------------


@runtime_checkable
class Provider(Protocol):
    """Anything with a ``name`` and ``async complete(request) -> Response``.

    ``complete`` must translate every failure into a class of
    :mod:`orchestrator.errors` (plain exceptions are treated as transient) and
    must not retry on its own: retries happen in the engine only.
    """

    name: str

    async def complete(self, request: Request) -> Response: ...


@runtime_checkable
class StreamingProvider(Provider, Protocol):
    """A provider that can stream: ``stream(request)`` yields text chunks, then one Response.

    The final :class:`Response` carries the full text and usage. A stream that
    ends without its terminator must raise ``StreamInterrupted``. Tool calls
    arrive as :class:`ToolCallDelta` pieces; the final Response holds them assembled.
    """

    def stream(self, request: Request) -> AsyncIterator[str | ToolCallDelta | Response]: ...
