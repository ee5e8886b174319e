"""Tool calls checked against the tools a request offered: one place, every provider.

:func:`check_tools` runs once per run that has tools (before the clock starts):
it refuses a schema that is not a valid JSON schema or is absurdly large or deep,
and builds (and caches) its validator. :func:`tool_call_error` runs on every
reply that carries tool calls, or answers a request whose ``tool_choice``
demands one: a call of a tool the request did not offer, arguments that fail the
tool's schema, or a reply that ignores ``tool_choice`` is ``InvalidOutput``
(retried per ``schema_retries``, then handed over). Providers decode the
arguments' JSON themselves (bounded, linear time) and raise ``InvalidOutput``
when it is not a JSON object.

``jsonschema`` is imported only when a request has tools: a chain without tools
never pays for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from orchestrator.errors import InvalidOutput, InvalidRequest
from orchestrator.types import Request, Tool, ToolCall

__all__ = ["MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "check_tools", "tool_call_error"]

#: A tool's parameter schema may nest this deep (objects and arrays)...
MAX_SCHEMA_DEPTH = 32
#: ...and hold this many values in all: past either it is refused when the run starts.
MAX_SCHEMA_NODES = 10_000


def _check_size(tool: Tool) -> None:
    """Refuse a schema past :data:`MAX_SCHEMA_DEPTH` or :data:`MAX_SCHEMA_NODES` (no recursion)."""
    stack: list[tuple[Any, int]] = [(tool.parameters, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES or depth > MAX_SCHEMA_DEPTH:
            raise ValueError(
                f"Tool {tool.name!r}: parameters schema is too large (limits: depth "
                f"{MAX_SCHEMA_DEPTH}, {MAX_SCHEMA_NODES} values); simplify it"
            )
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1) for v in node)


@lru_cache(maxsize=256)
def _validator(tool: Tool) -> Any:
    """The JSON-schema validator of ``tool``'s parameters (checked and built once per tool)."""
    import jsonschema

    _check_size(tool)
    cls = jsonschema.validators.validator_for(tool.parameters)
    try:
        cls.check_schema(dict(tool.parameters))
    except jsonschema.SchemaError as exc:
        raise ValueError(
            f"Tool {tool.name!r}: parameters is not a valid JSON schema: {exc.message}"
        ) from None
    return cls(tool.parameters)


def check_tools(tools: Sequence[Tool]) -> None:
    """Refuse (``ValueError``) a tool whose schema is invalid, too large or too deep."""
    for tool in tools:
        _validator(tool)


def _choice_error(request: Request, calls: Sequence[ToolCall]) -> str | None:
    choice = request.tool_choice
    if choice == "none" and calls:
        return "the reply calls a tool though tool_choice='none'"
    if choice == "required" and not calls:
        return "the reply calls no tool though tool_choice='required'"
    if choice not in (None, "auto", "required", "none") and (
        not calls or any(c.name != choice for c in calls)
    ):
        return f"the reply does not call {choice!r} though tool_choice names it"
    return None


def tool_call_error(
    request: Request, calls: Sequence[ToolCall], provider: str
) -> InvalidOutput | None:
    """``InvalidOutput`` when ``calls`` are not what ``request`` offered, else ``None``.

    A call of a tool not offered, arguments that do not match the tool's schema
    (the message names the tool and the failing path, never the values), or a
    reply that ignores ``tool_choice``.
    """
    problem = _choice_error(request, calls)
    if problem is None and calls:
        offered = {t.name: t for t in request.tools}
        for call in calls:
            tool = offered.get(call.name)
            if tool is None:
                names = ", ".join(offered) or "none"
                problem = f"the reply calls tool {call.name!r}, not offered (offered: {names})"
                break
            problem = _argument_error(tool, call, provider)
            if problem is not None:
                break
    return None if problem is None else InvalidOutput(problem, provider=provider)


def _argument_error(tool: Tool, call: ToolCall, provider: str) -> str | None:
    """What is wrong with ``call``'s arguments under ``tool``'s schema, or None.

    A schema that cannot be applied (a ``$ref`` that resolves nowhere: nothing
    is fetched) is the request's fault, not the reply's: ``InvalidRequest``.
    """
    try:
        error = next(iter(_validator(tool).iter_errors(dict(call.arguments))), None)
    except Exception as exc:
        raise InvalidRequest(
            f"tool {tool.name!r}: its parameters schema cannot be applied "
            f"({type(exc).__name__}); fix the schema",
            provider=provider,
        ) from None
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(root)"
    return (
        f"tool {call.name!r} arguments do not match its schema at {where}: "
        f"{error.validator} check failed"
    )
