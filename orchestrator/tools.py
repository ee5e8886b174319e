"""Tool calls checked against the tools a request offered: one place, every provider.

:func:`check_tools` runs when a :class:`~orchestrator.types.Request` with tools is
built: it refuses two tools of one name and a schema that is not a valid JSON
schema or is absurdly large or deep, and builds (and caches) each validator.
:func:`tool_call_error` runs on every reply that carries tool calls, or answers
a request whose ``tool_choice`` demands one: a call of a tool the request did not
offer, arguments that fail the tool's schema, or a reply that ignores
``tool_choice`` is ``InvalidOutput`` (retried per ``schema_retries``, then handed
over). Providers decode the arguments' JSON themselves (bounded, linear time) and
raise ``InvalidOutput`` when it is not a JSON object.

``jsonschema`` is imported only when a request has tools: a chain without tools
never pays for it.

Arguments come from the network, so a schema's regular expressions run on hostile
text: ``pattern`` is matched with RE2 (``google-re2``: linear time, where Python's
backtracking ``re`` takes exponential time on ``^(a+)+$`` and ``"aaaa...!"``). A
pattern RE2 cannot run (lookaround, backreferences) and ``patternProperties`` (whose
keys jsonschema matches with ``re`` in several keywords) are refused when the
request is built.

Schemas come from the network too (the gateway's clients), and nothing is fetched:
a ``$ref`` must be a local ``#/...`` pointer into the tool's own schema (checked
when the request is built), and the validator resolves through a registry that
retrieves nothing, so no reference can open a socket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from orchestrator.errors import InvalidOutput, InvalidRequest
from orchestrator.ignored import unknown_schema_keywords, warn_ignored
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


def _check_regexes(tool: Tool) -> None:
    """Refuse ``patternProperties`` and a ``pattern`` RE2 cannot compile (no recursion)."""
    # (node, names): ``names`` is a mapping of property names to schemas ("properties"...),
    # whose keys are names, not keywords (a property may be called "pattern").
    stack: list[tuple[Any, bool]] = [(tool.parameters, False)]
    while stack:
        node, names = stack.pop()
        if isinstance(node, Mapping):
            if not names:
                _check_keywords(tool, node)
            stack.extend((v, not names and k in _NAME_MAPS) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, False) for v in node)


_NAME_MAPS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})


_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def _check_keywords(tool: Tool, schema: Mapping[str, Any]) -> None:
    for keyword in _REF_KEYWORDS:
        if keyword in schema:
            _check_ref(tool, keyword, schema[keyword])
    if "$id" in schema and schema is not tool.parameters:
        # A nested $id would re-root "#/..." below it (and name a URL): one document only.
        raise ValueError(f"Tool {tool.name!r}: $id is only supported at the schema's root")
    if "patternProperties" in schema:
        raise ValueError(
            f"Tool {tool.name!r}: patternProperties is not supported (its regexes "
            "would run on the model's arguments without a linear-time bound)"
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        _re2(pattern, tool.name)


def _check_ref(tool: Tool, keyword: str, ref: Any) -> None:
    """Refuse a reference that is not a ``#/...`` pointer into ``tool``'s own schema."""
    shown = repr(ref)[:80]
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        raise ValueError(
            f"Tool {tool.name!r}: {keyword} {shown} is not a local '#/...' reference "
            "(nothing is fetched: put the schema under $defs and refer to '#/$defs/...')"
        )
    node: Any = tool.parameters
    for token in ref[2:].split("/") if ref != "#" else ():
        key = unquote(token).replace("~1", "/").replace("~0", "~")  # RFC 6901, in a URI
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise ValueError(f"Tool {tool.name!r}: {keyword} {shown} points at nothing")


@lru_cache(maxsize=1024)
def _re2(pattern: str, tool: str = "") -> Any:
    """``pattern`` compiled by RE2 (``ValueError`` naming ``tool`` when it cannot be)."""
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # else RE2's C++ logger writes to stderr before our message
    try:
        return re2.compile(pattern, options)
    except re2.error:
        raise ValueError(
            f"Tool {tool!r}: pattern {pattern[:80]!r} has no linear-time match (lookaround "
            "and backreferences are not supported); rewrite it"
        ) from None


def _linear_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """jsonschema's ``pattern`` keyword, matched by RE2 (checked by :func:`_check_regexes`)."""
    import jsonschema

    if validator.is_type(instance, "string") and not _re2(pattern).search(instance):
        yield jsonschema.ValidationError("does not match the pattern")  # never the value


@lru_cache(maxsize=256)
def _validator(tool: Tool) -> Any:
    """The JSON-schema validator of ``tool``'s parameters (checked and built once per tool)."""
    import jsonschema
    import referencing

    _check_size(tool)
    _check_regexes(tool)
    cls = jsonschema.validators.validator_for(tool.parameters)
    try:
        cls.check_schema(dict(tool.parameters))
    except jsonschema.SchemaError as exc:
        raise ValueError(
            f"Tool {tool.name!r}: parameters is not a valid JSON schema: {exc.message}"
        ) from None
    _warn_unknown_keywords(tool, frozenset(cls.VALIDATORS))
    extend: Any = jsonschema.validators.extend  # untyped in types-jsonschema
    linear = extend(cls, {"pattern": _linear_pattern})
    # An empty registry retrieves nothing: jsonschema's default fetches http(s) URLs.
    return linear(tool.parameters, registry=referencing.Registry())


def _warn_unknown_keywords(tool: Tool, known: frozenset[str]) -> None:
    """A keyword no validator knows (``"propertes"``) constrains nothing: the tool would
    go out as if it had no parameters. Warned once per tool (the validator is cached)."""
    unknown = unknown_schema_keywords(tool.parameters, known)
    if unknown:
        warn_ignored(
            f"Tool {tool.name[:64]!r}: unknown JSON Schema keyword(s) {', '.join(unknown)} "
            "are ignored by validation and by the providers; fix the spelling",
            remembered=False,  # the schema may come from a gateway's client
        )


def check_tools(tools: Sequence[Tool]) -> None:
    """Refuse (``ValueError``) two tools of one name, or a schema that is invalid, too large,
    too deep or refers outside itself; :class:`~orchestrator.types.Request` calls it."""
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"Request.tools: tool names must be unique, got {names}")
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
        ids: set[str] = set()
        for call in calls:
            tool = offered.get(call.name)
            if tool is None:
                names = ", ".join(offered) or "none"
                problem = (
                    f"the reply calls tool {_shown(call.name)}, not offered (offered: {names})"
                )
                break
            if call.id in ids:  # the caller answers calls by id: a second one is unanswerable
                problem = f"the reply has more than one call with id {_shown(call.id)}"
                break
            ids.add(call.id)
            problem = _argument_error(tool, call, provider)
            if problem is not None:
                break
    return None if problem is None else InvalidOutput(problem, provider=provider)


def _shown(text: str) -> str:
    """A name or id from the reply, for a message: quoted, escaped, at most 64 characters."""
    return repr(text[:64]) + ("..." if len(text) > 64 else "")


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
        f"tool {_shown(call.name)} arguments do not match its schema at {where}: "
        f"{error.validator} check failed"
    )
