"""Structured events for every attempt, retry, fallback and outcome (logger ``orchestrator``).

Events go through structlog with the logger name ``orchestrator``. They are
emitted when the application has configured structlog (``structlog.configure``)
or when forced with :func:`enable`; otherwise they cost one flag check, so a
library call never prints to stdout uninvited.

Event names: ``attempt_failed``, ``attempt_succeeded``, ``retry_scheduled``,
``fallback``, ``run_succeeded``, ``run_failed``, ``run_stopped``,
``terminal_error``, ``hook_failed``, ``hedge_started``, ``hedge_skipped``. Fields:
``agent`` (the chain), ``step`` (the workflow step the run serves, when it
serves one: :func:`in_step`), ``child``, ``to``, ``attempt``, ``error_kind``, ``error_type``,
``reason``, ``why``, ``delay``; ``run_failed`` adds ``deadline`` and ``untried`` (the
children the run's deadline left without an attempt), a ``terminal_error`` after text
was streamed (``reason`` ``mid_stream``) adds ``mid_stream`` and ``tool_call``. Events
carry no request text and no secret: only names, numbers and error types.

The attempt events carry what the attempt's span carries (see
:mod:`orchestrator.telemetry`): ``decision`` (``success``, ``retry``,
``fallback``, ``stop``: what the engine did next; ``attempt_failed`` is emitted
once it is decided, just before ``retry_scheduled``, ``fallback`` or
``terminal_error``), ``reason``, ``input_tokens`` / ``output_tokens`` (and
``cache_read_tokens`` / ``cache_write_tokens``, the prompt cache's part of the input, when
not 0) and ``cost_usd`` when the provider reported them, and ``duration``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import structlog

from orchestrator.errors import describe
from orchestrator.types import Attempt

__all__ = [
    "LOGGER_NAME",
    "attempt_fields",
    "emit",
    "enable",
    "enabled",
    "error_fields",
    "in_step",
    "is_enabled",
]

LOGGER_NAME = "orchestrator"
_forced: bool | None = None


class _Asking:
    """Stands for structlog's configuration should a release no longer have it where read."""

    @property
    def is_configured(self) -> bool:
        return structlog.is_configured()


#: structlog's configuration, whose flag ``is_configured()`` returns: read directly, since
#: every run asks twice (a call to read it costs more than the flag).
_structlog: Any = getattr(getattr(structlog, "_config", None), "_CONFIG", None)
if not isinstance(getattr(_structlog, "is_configured", None), bool):
    _structlog = _Asking()
_logger: Any = None
#: The workflow step whose run emits: a context variable, so parallel steps (each its own
#: task) on one agent keep their own label.
_step: ContextVar[str | None] = ContextVar("failover_step", default=None)


def enable(on: bool | None = True) -> None:
    """Force events on (True) or off (False); None returns to "when structlog is configured"."""
    global _forced
    _forced = on


def is_enabled() -> bool:
    """Whether events are emitted now."""
    return _structlog.is_configured if _forced is None else _forced


@contextmanager
def enabled(on: bool = True) -> Iterator[None]:
    """Turn events on (or off) inside a ``with`` block; restores the previous setting."""
    global _forced
    before = _forced
    _forced = on
    try:
        yield
    finally:
        _forced = before


def emit(level: str, event: str, **fields: Any) -> None:
    """Emit one event at ``level`` (debug, info, warning, error) if events are on."""
    if _forced is False or (_forced is None and not _structlog.is_configured):
        return
    global _logger
    if _logger is None:
        _logger = structlog.get_logger(LOGGER_NAME)
    step = _step.get()
    if step is not None:
        fields.setdefault("step", step)
    getattr(_logger, level)(event, logger=LOGGER_NAME, **fields)


@contextmanager
def in_step(name: str) -> Iterator[None]:
    """Label every event emitted inside the block (this task and tasks it starts) with
    the workflow step ``name``; restores the outer label on the way out."""
    token = _step.set(name)
    try:
        yield
    finally:
        _step.reset(token)


def error_fields(error: BaseException | None) -> dict[str, Any]:
    """The safe description of an error for an event: kind and type, never its arguments."""
    return {} if error is None else describe(error)


def attempt_fields(attempt: Attempt) -> dict[str, Any]:
    """An attempt's outcome for its event: reason and error, tokens and cost when known
    (``unpriced`` when it was billed at a cost nobody knows)."""
    fields: dict[str, Any] = {}
    if attempt.reason is not None:
        fields["reason"] = attempt.reason
    if attempt.usage is not None:
        fields["input_tokens"] = attempt.usage.input_tokens
        fields["output_tokens"] = attempt.usage.output_tokens
        if attempt.usage.cache_read_tokens:
            fields["cache_read_tokens"] = attempt.usage.cache_read_tokens
        if attempt.usage.cache_write_tokens:
            fields["cache_write_tokens"] = attempt.usage.cache_write_tokens
    if attempt.cost_usd is not None:
        fields["cost_usd"] = attempt.cost_usd
    elif attempt.unpriced:
        fields["unpriced"] = True  # billed, but Result.cost_usd cannot count it
    if attempt.error is not None:
        fields.update(describe(attempt.error))
    return fields
