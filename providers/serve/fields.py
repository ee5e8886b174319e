"""Reading fields of a client's JSON body: each check names the field, the rule and the value.

Shared by both wire formats. Everything raises :class:`BadRequest` (400), so a
malformed request never reaches a provider and never becomes a 500.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from orchestrator.routing.router import MAX_KEY_CHARS
from orchestrator.types import Request, Tool, ToolCall
from providers.http.safe_json import parse_json
from providers.serve.failures import BadRequest

__all__ = [
    "affinity",
    "arguments",
    "body_object",
    "objects",
    "optional",
    "positive_int",
    "request",
    "require",
    "stop_sequences",
    "text",
    "tool",
    "tool_call",
]

_MAX_SHOWN = 40


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def body_object(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object (bounded, strict parsing), or 400."""
    try:
        data = parse_json(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(data).__name__}")
    return data


def objects(items: list[Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each item of the JSON list ``where`` as (its place, ``where[i]``, and the object); 400
    at the first item that is not an object."""
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{at}: expected an object")
        yield at, item


def require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``data[key]``, which must be present, not null, and of ``kind``."""
    value = data.get(key)
    if value is None:  # JSON null is no value: it would reach code expecting one
        raise BadRequest(f"{where}{key}: required")
    return value if type(value) is kind else optional(data, key, kind, where)


def optional(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``data[key]`` when present and not null (None otherwise); it must be of ``kind``."""
    value = data.get(key)
    if value is None or type(value) is kind:  # exactly the kind asked for: nothing to weigh
        return value
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        names = "/".join(k.__name__ for k in _kinds(kind))
        raise BadRequest(f"{where}{key}: expected {names}, got {_shown(value)}")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def positive_int(data: Mapping[str, Any], key: str) -> int | None:
    """An optional positive integer such as ``max_tokens``."""
    if data.get(key) is None:  # most calls leave it out: no check to make
        return None
    value: int | None = optional(data, key, int, "")
    if value is not None and value < 1:
        raise BadRequest(f"{key}: must be a positive integer, got {value}")
    return value


def temperature(data: Mapping[str, Any]) -> float | None:
    """``temperature``: an optional number from 0 to 2."""
    if data.get("temperature") is None:  # most calls leave it out: no check to make
        return None
    value = optional(data, "temperature", (int, float), "")
    if value is not None and not 0 <= value <= 2:
        raise BadRequest(f"temperature: must be between 0 and 2, got {value}")
    return None if value is None else float(value)


def stop_sequences(value: Any, key: str) -> tuple[str, ...]:
    """A stop string or a list of them."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise BadRequest(f"{key}: expected a string or a list of strings, got {_shown(value)}")
    return tuple(items)


def tool(name: Any, description: Any, schema: Any, where: str) -> Tool:
    """A :class:`Tool` from a client's declaration, or 400 naming what is wrong."""
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if description is None:
        description = ""
    try:
        return Tool(name, description, schema)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{where}: {exc}") from None


def arguments(text: Any, where: str) -> dict[str, Any]:
    """A tool call's arguments given as JSON text (OpenAI's wire), as a dict."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        raise BadRequest(f"{where}: expected a JSON string, got {_shown(text)}")
    if not text.strip():
        return {}
    try:
        value = parse_json(text)
    except ValueError as exc:
        raise BadRequest(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"{where}: must encode a JSON object, got {type(value).__name__}")
    return value


def text(content: Any, where: str, kinds: frozenset[str] = frozenset({"text"})) -> str:
    """Message content as text: a string, or a list of parts whose ``type`` is one of ``kinds``
    (images, audio and files are refused: the gateway carries text)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content: expected a string or a list of parts")
    parts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in kinds:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise BadRequest(f"{where}.content[{i}]: only text parts are supported, got {kind!r}")
        parts.append(require(part, "text", str, f"{where}.content[{i}]."))
    return "".join(parts)


def request(**fields: Any) -> Request:
    """A :class:`Request`; what the core refuses (a tool schema it cannot apply, a tool
    choice naming no tool, no message at all) is the client's 400."""
    try:
        return Request(**fields)
    except (TypeError, ValueError) as exc:
        raise BadRequest(str(exc)) from None


def tool_call(call_id: Any, name: Any, args: dict[str, Any], where: str) -> ToolCall:
    """A :class:`ToolCall` from the client's history, or 400 naming what is wrong."""
    try:
        return ToolCall(call_id, name, args)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{where}: {exc}") from None


def affinity(*candidates: Any) -> str | None:
    """The call's affinity key: the first candidate that is a usable key (a string of 1 to
    1,024 characters; ``x-failover-affinity``, then the body's ``prompt_cache_key`` /
    ``user`` or ``metadata.user_id``). Others are ignored, not refused: clients set
    these fields for their own reasons, and a key only routes."""
    for value in candidates:
        if isinstance(value, str) and 0 < len(value) <= MAX_KEY_CHARS:
            return value
    return None
