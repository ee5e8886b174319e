"""What the next child is handed when a run falls over: the request as ``before_fallback``
leaves it (a redaction, or a Stop), and a note of why it was handed the call."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING

from orchestrator.engine.attempt import call_hook
from orchestrator.errors import HookError
from orchestrator.summary import attempt_summaries
from orchestrator.types import Attempt, Request, Stop

if TYPE_CHECKING:
    from orchestrator.engine.run import Run

__all__ = ["before_fallback", "with_handover"]


async def before_fallback(run: Run, reason: str) -> Request | Stop:
    """The request for the next child as ``before_fallback`` leaves it (or its Stop)."""
    hook = run.agent.before_fallback
    if hook is None:
        return run.request
    # A deep copy: redaction must never change the caller's request.
    request = copy.deepcopy(run.delivery.for_hook(run.request))
    decision = await call_hook("before_fallback", hook, request, reason)
    if not isinstance(decision, Request | Stop):
        raise HookError(
            "before_fallback",
            TypeError(f"returned {type(decision).__name__}; return a Request or Stop"),
        )
    return decision


def with_handover(
    run: Run, request: Request, reason: str, tried: Sequence[Attempt] | None = None
) -> Request:
    """``request`` telling the next child why it was handed the call, and what was tried
    (``tried``: the run's attempts unless given)."""
    tried = run.log.attempts if tried is None else tried
    handover = {"reason": reason, "attempts": attempt_summaries(tried)}
    return request.replace(metadata={**request.metadata, "handover": handover})
