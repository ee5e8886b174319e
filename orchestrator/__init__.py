"""failover-orchestrator: keep LLM calls working when providers fail.

Public API (implementation modules are private)::

    from orchestrator import FallbackAgent, FallbackError, RetryPolicy, Request
"""

from __future__ import annotations

from orchestrator import errors
from orchestrator.clock import Clock, SystemClock
from orchestrator.engine.agent import FallbackAgent
from orchestrator.errors import FailoverError, FallbackError, HookError
from orchestrator.policy import RetryPolicy
from orchestrator.types import (
    REASONS,
    Attempt,
    Message,
    Provider,
    Request,
    Response,
    Result,
    Stop,
    StreamingProvider,
    Usage,
)
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
    "FailoverError",
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
