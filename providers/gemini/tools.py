"""Tools and multi-turn history in Gemini's wire format.

Tools go as ``tools: [{functionDeclarations: [...]}]`` (parameters translated
to Gemini's schema dialect by :func:`~providers.gemini.schema.gemini_schema`),
``tool_choice`` as ``toolConfig.functionCallingConfig`` (``AUTO``/``ANY``/
``NONE``, ``allowedFunctionNames`` for one tool). The model's ``functionCall``
parts carry no id: each gets one made up (:func:`made_up_id`). A tool result
goes back as a ``functionResponse`` part named after the function, looked up
from the earlier assistant tool call with the message's ``tool_call_id``;
consecutive results share one user turn, as Gemini wants for parallel calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.errors import InvalidRequest
from orchestrator.types import Message, Request, ToolCall
from providers.gemini.schema import gemini_schema
from providers.http.base import Missing
from providers.http.safe_json import parse_json
from providers.http.tools import MAX_TOOL_CALLS, made_up_id, tool_call, tool_names_by_id

__all__ = ["contents", "function_calls", "tool_fields"]

_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}


def contents(request: Request, system: list[str], provider: str) -> list[dict[str, Any]]:
    """The history as Gemini ``contents`` (system text goes to ``system``)."""
    names = tool_names_by_id(request) if request.tools or _has_results(request) else {}
    out: list[dict[str, Any]] = []
    for m in request.messages:
        if m.role == "system":
            system.append(m.content)
        elif m.role == "tool":
            part = {"functionResponse": {"name": _name(names, m, provider), "response": _result(m)}}
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "user"
                and "functionResponse" in last["parts"][0]
            ):
                last["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        elif m.tool_calls:
            parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
            parts += [
                {"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in m.tool_calls
            ]
            out.append({"role": "model", "parts": parts})
        else:
            role = "model" if m.role == "assistant" else "user"
            out.append({"role": role, "parts": [{"text": m.content}]})
    return out


def _has_results(request: Request) -> bool:
    return any(m.role == "tool" for m in request.messages)


def _name(names: Mapping[str, str], m: Message, provider: str) -> str:
    name = names.get(m.tool_call_id or "")
    if name is None:
        raise InvalidRequest(
            f"tool message answers tool_call_id {m.tool_call_id!r}, which no earlier assistant "
            "message made; Gemini names the function a result answers: keep the assistant "
            "message with that ToolCall in the history",
            provider=provider,
        )
    return name


def _result(m: Message) -> dict[str, Any]:
    """The ``response`` object: the content itself when it is a JSON object, else
    ``{"result": content}`` (Gemini takes an object, not text)."""
    try:
        value = parse_json(m.content)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"result": m.content}


def tool_fields(request: Request) -> dict[str, Any]:
    """``tools`` and ``toolConfig`` for the request body (empty without tools)."""
    if not request.tools:
        return {}
    declarations = []
    for t in request.tools:
        declaration: dict[str, Any] = {"name": t.name, "description": t.description}
        if t.parameters.get("properties"):  # Gemini refuses an OBJECT without properties
            declaration["parameters"] = gemini_schema(t.parameters)
        declarations.append(declaration)
    out: dict[str, Any] = {"tools": [{"functionDeclarations": declarations}]}
    choice = request.tool_choice
    if choice is not None:
        config: dict[str, Any] = {"mode": _MODES.get(choice, "ANY")}
        if choice not in _MODES:
            config["allowedFunctionNames"] = [choice]
        out["toolConfig"] = {"functionCallingConfig": config}
    return out


def function_calls(parts: Any, first: int = 0) -> list[ToolCall]:
    """The ``functionCall`` parts of a candidate's ``parts``, as ToolCalls numbered
    from ``first`` (a stream numbers its calls across chunks)."""
    if not isinstance(parts, list):
        return []
    out: list[ToolCall] = []
    for p in parts:
        call = p.get("functionCall") if isinstance(p, Mapping) else None
        if call is None:
            continue
        if not isinstance(call, Mapping) or first + len(out) >= MAX_TOOL_CALLS:
            raise Missing(
                f"reply has a functionCall that is not an object, or over {MAX_TOOL_CALLS}"
            )
        name, args = call.get("name"), call.get("args") or {}
        if not isinstance(args, Mapping):
            raise Missing(f"functionCall {name!r} args are not a JSON object")
        call_id = call.get("id") or made_up_id(first + len(out), str(name), args)
        out.append(tool_call(call_id, name, args))
    return out
