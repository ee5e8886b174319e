"""failover-orchestrator: keep LLM calls working when providers fail.

Public API (implementation modules are private)::

    from orchestrator import FallbackAgent, FallbackError, RetryPolicy, Request
"""

from __future__ import annotations

from orchestrator import errors
from orchestrator._attempt import REASONS, Attempt
from orchestrator._clock import Clock, SystemClock
from orchestrator._provider import Provider, StreamingProvider
from orchestrator._request import Message, Request, Response, Usage
from orchestrator._result import Result, Stop
from orchestrator.errors import FallbackError, HookError
from orchestrator.fallback import FallbackAgent
from orchestrator.policy import RetryPolicy
from orchestrator.workflow import (
    Parallel,
    Phase,
    Step,
    Workflow,
    WorkflowError,
    WorkflowResult,
)

__all__ = [
    "REASONS",
    "Attempt",
    "Clock",
    "FallbackAgent",
    "FallbackError",
    "HookError",
    "Message",
    "Parallel",
    "Phase",
    "Provider",
    "Request",
    "Response",
    "Result",
    "RetryPolicy",
    "Step",
    "Stop",
    "StreamingProvider",
    "SystemClock",
    "Usage",
    "Workflow",
    "WorkflowError",
    "WorkflowResult",
    "errors",
]
