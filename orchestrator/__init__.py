"""failover-orchestrator: keep LLM calls working when providers fail.

Public API (implementation modules are private)::

    from orchestrator import FallbackAgent, FallbackError, RetryPolicy, Request

The names load on first use (PEP 562), like ``providers``.
"""

from __future__ import annotations

import importlib as _importlib

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 2 ms at start-up
if TYPE_CHECKING:
    from typing import Any

    from orchestrator import errors
    from orchestrator.capacity import Budget, Limits
    from orchestrator.clock import Clock, SystemClock
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.classify import only
    from orchestrator.engine.deadlines import DEFAULT_IDLE_TIMEOUT, PROGRESS
    from orchestrator.errors import FailoverError, FallbackError, HookError
    from orchestrator.ignored import IgnoredSetting
    from orchestrator.journal import (
        Journal,
        JournalError,
        RunInProgress,
        SQLiteJournal,
        StepInterrupted,
        WorkflowChanged,
    )
    from orchestrator.journal.dbos import DBOSJournal
    from orchestrator.journal.postgres import PostgresJournal
    from orchestrator.policy import RetryPolicy
    from orchestrator.routing.split import Split
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
        Tool,
        ToolCall,
        ToolCallDelta,
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

# Loaded on first use, so importing the package (as the ``failover`` script does before
# it can handle Ctrl-C) costs almost nothing.
_LAZY = {
    "errors": "orchestrator.errors",
    "REASONS": "orchestrator.types",
    "DEFAULT_IDLE_TIMEOUT": "orchestrator.engine.deadlines",
    "PROGRESS": "orchestrator.engine.deadlines",
    "Attempt": "orchestrator.types",
    "Budget": "orchestrator.capacity",
    "Limits": "orchestrator.capacity",
    "Clock": "orchestrator.clock",
    "SystemClock": "orchestrator.clock",
    "Provider": "orchestrator.types",
    "StreamingProvider": "orchestrator.types",
    "Message": "orchestrator.types",
    "Request": "orchestrator.types",
    "Response": "orchestrator.types",
    "Usage": "orchestrator.types",
    "Tool": "orchestrator.types",
    "ToolCall": "orchestrator.types",
    "ToolCallDelta": "orchestrator.types",
    "Result": "orchestrator.types",
    "Stop": "orchestrator.types",
    "FailoverError": "orchestrator.errors",
    "FallbackError": "orchestrator.errors",
    "HookError": "orchestrator.errors",
    "IgnoredSetting": "orchestrator.ignored",
    "Journal": "orchestrator.journal",
    "JournalError": "orchestrator.journal",
    "RunInProgress": "orchestrator.journal",
    "SQLiteJournal": "orchestrator.journal",
    "PostgresJournal": "orchestrator.journal.postgres",
    "DBOSJournal": "orchestrator.journal.dbos",
    "StepInterrupted": "orchestrator.journal",
    "WorkflowChanged": "orchestrator.journal",
    "FallbackAgent": "orchestrator.engine.agent",
    "only": "orchestrator.engine.classify",
    "RetryPolicy": "orchestrator.policy",
    "Split": "orchestrator.routing.split",
    "Parallel": "orchestrator.workflow",
    "Phase": "orchestrator.workflow",
    "Step": "orchestrator.workflow",
    "Workflow": "orchestrator.workflow",
    "WorkflowError": "orchestrator.workflow",
    "WorkflowResult": "orchestrator.workflow",
}

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "PROGRESS",
    "REASONS",
    "Attempt",
    "Budget",
    "Clock",
    "DBOSJournal",
    "FailoverError",
    "FallbackAgent",
    "FallbackError",
    "HookError",
    "IgnoredSetting",
    "Journal",
    "JournalError",
    "Limits",
    "Message",
    "Parallel",
    "Phase",
    "PostgresJournal",
    "Provider",
    "Request",
    "Response",
    "Result",
    "RetryPolicy",
    "RunInProgress",
    "SQLiteJournal",
    "Split",
    "Step",
    "StepInterrupted",
    "Stop",
    "StreamingProvider",
    "SystemClock",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "Workflow",
    "WorkflowChanged",
    "WorkflowError",
    "WorkflowResult",
    "errors",
    "only",
]


del TYPE_CHECKING


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    loaded = _importlib.import_module(module)
    value = loaded if name == "errors" else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
