"""The JSON body ``HTTPFallback`` POSTs: the request and the record of its hand-over.

Only the prompt, messages, system, tools and the hand-over's reason and attempts
(``request.metadata["handover"]``, filled in by the engine) are sent: no other
metadata and no secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.types import Message, Request

__all__ = ["handover_payload"]

_ATTEMPT_KEYS = ("agent", "error_type", "reason", "attempt_number")


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


def handover_payload(request: Request) -> dict[str, Any]:
    """The JSON body for ``request``: prompt, messages, system and the hand-over record
    (and ``tools``/``tool_choice`` when it has tools: only sent with ``supports_tools``)."""
    handover = request.metadata.get("handover")
    handover = handover if isinstance(handover, Mapping) else {}
    attempts = handover.get("attempts")
    reason = handover.get("reason")
    tools: dict[str, Any] = {}
    if request.tools:
        tools["tools"] = [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in request.tools
        ]
        tools["tool_choice"] = request.tool_choice
    return {
        **tools,
        "prompt": request.prompt,
        "messages": [_message(m) for m in request.messages],
        "system": request.system,
        "reason": reason if isinstance(reason, str) else None,
        "attempts": [
            {k: a.get(k) for k in _ATTEMPT_KEYS}
            for a in (attempts if isinstance(attempts, list | tuple) else ())
            if isinstance(a, Mapping)
        ],
    }
