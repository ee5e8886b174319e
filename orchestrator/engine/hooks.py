"""What each hook of a :class:`~orchestrator.engine.agent.FallbackAgent` is called with.

Checked once, when the agent is built: an observational hook that raises does
not stop a run, so one that cannot take its arguments would otherwise fail
quietly on every call (a ``hook_failed`` event nobody reads).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["HOOK_CALLS", "check_hooks", "takes_four"]

#: Hook name -> the arguments it is called with (``on_fallback`` may take a fourth, ``reason``).
HOOK_CALLS: dict[str, tuple[str, ...]] = {
    "accept": ("result",),
    "on_fallback": ("from_name", "to_name", "error"),
    "on_all_failed": ("errors",),
    "on_retry": ("name", "attempt", "error", "delay"),
    "before_fallback": ("request", "reason"),
    "best_effort": ("attempts",),
}


def check_hooks(hooks: dict[str, Callable[..., Any] | None]) -> None:
    """``TypeError`` for a hook that is not callable or cannot take its arguments."""
    for name, hook in hooks.items():
        if hook is None:
            continue
        if not callable(hook):
            raise TypeError(f"{name}: expected a callable, got {type(hook).__name__}")
        args = HOOK_CALLS[name]
        try:
            signature = inspect.signature(hook)
        except (TypeError, ValueError):
            continue  # a builtin or C callable without a signature: trust it
        if not _binds(signature, len(args)) and not (
            name == "on_fallback" and _binds(signature, len(args) + 1)
        ):
            call = f"{name}({', '.join(args)})"
            shown = getattr(hook, "__qualname__", None) or repr(hook)
            raise TypeError(f"{name}: {shown} cannot be called as {call}")


def _binds(signature: inspect.Signature, count: int) -> bool:
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def takes_four(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` (``on_fallback``) takes a fourth positional argument, ``reason``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False  # (*args) hooks keep the documented three-argument call
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 4
