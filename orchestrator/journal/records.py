"""What the journal keeps of a run and of each step, and how a step's Result is kept.

A completed step keeps its text, value, usage, cost, who answered and a summary of
each attempt (who, which try, how it ended, tokens, cost): never the request, and
never an error's message. :func:`fingerprint` tells whether a step is still the
one the journal recorded: its rendered request and its chain.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from orchestrator.types import Attempt, Request, Result, ToolCall
from orchestrator.usage import Usage

__all__ = [
    "MAX_RECORD_CHARS",
    "RunRecord",
    "StepRecord",
    "StepStatus",
    "decode_result",
    "dumps",
    "encode_result",
    "fingerprint",
]

StepStatus = Literal["started", "done", "failed"]
#: A stored result larger than this is refused when read back: the journal file is input.
MAX_RECORD_CHARS = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step of a run as the journal has it; ``result`` is set once it is ``done``,
    ``partial`` is the text a stream had delivered when the run last saw it."""

    step: str
    status: StepStatus
    fingerprint: str
    started_at: float
    finished_at: float | None = None
    result: dict[str, Any] | None = None
    partial: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: its id, workflow, state (``running``, ``done``, ``failed``), who holds it."""

    run_id: str
    workflow: str
    status: str
    created_at: float
    updated_at: float
    holder: str | None = None


def _chain(node: Any, depth: int = 0) -> str:
    """The identity of a chain: each child's type, name and model, in order (bounded)."""
    children = getattr(node, "children", None)
    if children is None or depth > 8:
        return f"{type(node).__name__}:{getattr(node, 'name', '')}:{getattr(node, 'model', '')}"
    return f"{getattr(node, 'name', '')}[" + ",".join(_chain(c, depth + 1) for c in children) + "]"


def fingerprint(node: Any, request: Request, schema: type[Any] | None = None) -> str:
    """A digest of what a step sends (every message, the system prompt, options, tools)
    and to which chain; equal digests mean the journal's result still answers it."""
    h = hashlib.sha256()
    h.update(_chain(node).encode())
    h.update(repr((request.system, request.max_tokens, request.temperature)).encode())
    h.update(repr((request.stop, request.tool_choice, [t.name for t in request.tools])).encode())
    h.update(repr(getattr(schema, "__qualname__", None)).encode())
    for m in request.messages:
        h.update(b"\0" + m.role.encode() + b"\0" + str(m.content).encode())
    return h.hexdigest()[:32]


def _counts(usage: Usage) -> list[int]:
    """``[input, output]``, with the prompt cache's reads and writes when it had any (a
    journal written before they were counted holds two numbers: read the same)."""
    cached = [usage.cache_read_tokens, usage.cache_write_tokens]
    return [usage.input_tokens, usage.output_tokens, *(cached if any(cached) else [])]


def _attempt(a: Attempt) -> dict[str, Any]:
    usage = None if a.usage is None else _counts(a.usage)
    # The error object stays out: its message is the provider's, and only its kind matters.
    reason = None if a.ok else (a.reason or "error")
    note = a.note if a.ok or a.error is None else (a.note or a.kind_label())
    return {
        "agent": a.agent,
        "n": a.attempt_number,
        "at": a.started_at,
        "took": a.duration,
        "reason": reason,
        "note": note,
        "usage": usage,
        "cost": a.cost_usd,
    }


def encode_result(result: Result[Any]) -> dict[str, Any]:
    """A step's Result as JSON-ready data (no request text, no error message)."""
    value = result.value
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return {
        "text": result.text,
        "handled_by": result.handled_by,
        "model": result.model,
        "latency": result.latency,
        "value": value,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in result.tool_calls
        ],
        "attempts": [_attempt(a) for a in result.attempts],
        "order": list(result.order),
        "arm": result.arm,
        "best_effort": result.best_effort,
    }


def decode_result(data: dict[str, Any], schema: type[Any] | None = None) -> Result[Any]:
    """The Result :func:`encode_result` kept; ``schema`` validates the value again."""
    attempts = tuple(
        Attempt(
            agent=str(a["agent"]),
            error=None,
            attempt_number=int(a["n"]),
            started_at=float(a["at"]),
            duration=float(a["took"]),
            reason=a["reason"],
            usage=None if a["usage"] is None else Usage(*(int(n) for n in a["usage"][:4])),
            cost_usd=a["cost"],
            note=a["note"],
        )
        for a in data["attempts"]
    )
    value = data["value"]
    validate = getattr(schema, "model_validate", None)
    if value is not None and validate is not None:
        value = validate(value)
    calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in data["tool_calls"])
    return Result(
        text=str(data["text"]),
        handled_by=data["handled_by"],
        attempts=attempts,
        latency=float(data["latency"]),
        value=value,
        model=data["model"],
        tool_calls=calls,
        best_effort=bool(data.get("best_effort", False)),  # absent from older records
        order=tuple(str(n) for n in data.get("order", ())),
        arm=None if data.get("arm") is None else str(data["arm"]),
    )


def dumps(data: dict[str, Any]) -> str:
    """Compact JSON, as the journal stores it."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
