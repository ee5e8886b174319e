"""What ``failover`` prints: results and attempts as JSON, the check summary, the ping table.

Everything printed comes from attempts and error messages, which providers
already scrub of keys; nothing here reads a provider's key.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.cli.preflight import workflow_inputs
from orchestrator.errors import meaning
from orchestrator.types import Attempt, Request, Result, Usage

__all__ = [
    "CHECK_HEADER",
    "PING_HEADER",
    "PingRow",
    "attempt_json",
    "check_rows",
    "check_summary",
    "error_json",
    "failure_json",
    "ping_all",
    "ping_rows",
    "result_json",
]


def _usage(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    out = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens or usage.cache_write_tokens:  # the prompt cache's part
        out["cache_read_tokens"] = usage.cache_read_tokens
        out["cache_write_tokens"] = usage.cache_write_tokens
    return out


def error_json(error: BaseException | None) -> dict[str, Any] | None:
    """``{"type", "message", "status"}`` for an error (None for no error)."""
    if error is None:
        return None
    return {
        "type": type(error).__name__,
        "message": str(error),
        "status": getattr(error, "status", None),
    }


def attempt_json(a: Attempt) -> dict[str, Any]:
    """One attempt: who, which try, when, how long, why it failed, tokens and cost."""
    return {
        "agent": a.agent,
        "attempt_number": a.attempt_number,
        "started_at": a.started_at,
        "duration": a.duration,
        "ok": a.ok,
        "reason": a.reason,
        "note": a.note,
        "error": error_json(a.error),
        "usage": _usage(a.usage),
        "cost_usd": a.cost_usd,
    }


def result_json(result: Result) -> dict[str, Any]:
    """The whole Result, every attempt included (the winning one last)."""
    value = result.value
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return {
        "ok": True,
        "text": result.text,
        "handled_by": result.handled_by,
        "model": result.model,
        "latency": result.latency,
        "usage": _usage(result.usage),
        "cost_usd": result.cost_usd,
        "unpriced_attempts": len(result.unpriced_attempts),  # billed, not in cost_usd
        "value": value,
        "stopped": None
        if result.stopped is None
        else {"text": result.stopped.text, "reason": result.stopped.reason},
        "best_effort": result.best_effort,
        "order": list(result.order),  # the children in the order the run tried them
        "arm": result.arm,
        "attempts": [attempt_json(a) for a in result.attempts],
    }


def failure_json(error: BaseException, attempts: Sequence[Attempt] = ()) -> dict[str, Any]:
    """A failed run: the error and every attempt made."""
    return {
        "ok": False,
        "error": error_json(error),
        "attempts": [attempt_json(a) for a in attempts],
    }


CHECK_HEADER = ("declares", "name", "detail")


def check_rows(config: Any) -> list[tuple[str, str, str]]:
    """What a loaded chain file declares, as rows under :data:`CHECK_HEADER`:
    each provider with its type, each agent with its chain, each workflow's size
    and the inputs its prompts need."""
    rows = [("provider", name, kind) for name, kind in config.provider_types.items()]
    for name, agent in config.agents.items():
        rows.append(("agent", name, " -> ".join(c.name for c in agent.children)))
    for name, wf in config.workflows.items():
        steps = sum(len(getattr(n, "steps", (n,))) for p in wf.phases for n in p.nodes)
        needs = ", ".join(workflow_inputs(wf))
        detail = f"{len(wf.phases)} phase(s), {steps} step(s); inputs: {needs}"
        rows.append(("workflow", name, detail))
    return rows


def check_summary(config: Any) -> list[str]:
    """The rows of :func:`check_rows` as plain lines, after ``ok: PATH``."""
    rows = check_rows(config)
    lines = [f"ok: {config.path}"]
    providers = [f"{name} ({kind})" for what, name, kind in rows if what == "provider"]
    if providers:
        lines.append("  providers: " + ", ".join(providers))
    lines += [f"  {what} {name}: {detail}" for what, name, detail in rows if what != "provider"]
    return lines


@dataclass(frozen=True, slots=True)
class PingRow:
    """One provider's answer to the ping: ``kind`` is ok or the error's class of failure."""

    provider: str
    type: str
    kind: str
    error: str | None
    latency: float

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def _kind(error: BaseException) -> str:
    """ "timeout", else the taxonomy family the error's class names, else "error"."""
    means = meaning(error)
    if means is not None and means.reason == "timeout":
        return "timeout"
    kind = getattr(error, "kind", None)
    return kind if kind in ("transient", "unusable", "invalid_output", "terminal") else "error"


async def _ping(name: str, kind: str, provider: Any, timeout: float) -> PingRow:
    start = time.perf_counter()
    try:
        await asyncio.wait_for(
            provider.complete(Request("Reply with: pong", max_tokens=8)), timeout
        )
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else ""
        detail = f"{type(exc).__name__}: {text}"[:100]
        return PingRow(name, kind, _kind(exc), detail, time.perf_counter() - start)
    return PingRow(name, kind, "ok", None, time.perf_counter() - start)


async def ping_all(
    providers: Mapping[str, Any], types: Mapping[str, str], timeout: float
) -> list[PingRow]:
    """One tiny request through each provider alone (no chain, no retry), concurrently."""
    return list(
        await asyncio.gather(
            *(_ping(n, types.get(n, "?"), p, timeout) for n, p in providers.items())
        )
    )


PING_HEADER = ("provider", "type", "result", "latency", "detail")


def ping_rows(rows: Sequence[PingRow]) -> list[tuple[str, ...]]:
    """The ping results as table rows under :data:`PING_HEADER`."""
    return [(r.provider, r.type, r.kind, f"{r.latency * 1000:.0f} ms", r.error or "") for r in rows]
