"""The ``failover`` console script's entry (also ``python -m orchestrator``).

Ctrl-C must end the command quietly with exit 130 at any moment, including
while the command is still importing its modules (pydantic, aiohttp, ...,
a few hundred milliseconds). So this module imports nothing but ``sys``
before the ``try``, and the package it lives in loads its names lazily.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing before the try would be a window
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["main"]


_swallowed: list[BaseException] = []
_previous_hook = sys.unraisablehook


def _unraisable(args: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in a finalizer or an import-lock callback is "ignored" by Python
    (printed as a traceback, then lost): note it instead, and end with 130."""
    if args.exc_type is not None and issubclass(args.exc_type, KeyboardInterrupt):
        _swallowed.append(args.exc_value or KeyboardInterrupt())
    else:
        _previous_hook(args)


def main(release: Callable[[], None] | None = None) -> int:
    """Run ``failover`` with ``sys.argv``; 130 (and one line) when interrupted anywhere.

    ``release`` runs first inside the ``try``: the console script's entry
    (:mod:`orchestrator._entry`) puts its Ctrl-C handler back there and raises a Ctrl-C
    it held while nothing of ours could catch it."""
    global _previous_hook
    _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        if release is not None:
            release()
        from orchestrator.cli import main as run

        code = run()
        import signal  # loaded long ago by asyncio: free

        # Done: a Ctrl-C while the interpreter shuts down must not turn success into a kill.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if _swallowed and code != 130:
            sys.stderr.write("failover: interrupted\n")
            code = 130
    except BaseException as exc:
        if not (_swallowed or _interrupted(exc)):
            raise
        sys.stderr.write("failover: interrupted\n")
        code = 130
    finally:
        sys.unraisablehook = _previous_hook
    if code == 130:
        _leave_now()
    return code


def _leave_now() -> None:
    """Exit 130 without the interpreter's shutdown: a Ctrl-C can leave a half-built object
    (an event loop interrupted in its constructor) whose finalizer prints a traceback."""
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken pipe
            stream.flush()
    os._exit(130)


def _interrupted(exc: BaseException) -> bool:
    """True if ``exc`` is, or was raised while handling, a KeyboardInterrupt.

    A Ctrl-C can land inside someone's ``finally`` that then fails (argparse's
    intermixed parsing restores attributes it had not yet saved, raising
    AttributeError): the user still pressed Ctrl-C.
    Libraries in other languages (pydantic-core builds schemas in Rust) may turn it
    into their own error that only names it, so the name in the message counts too.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, KeyboardInterrupt) or "KeyboardInterrupt" in str(current):
            return True
        seen.add(id(current))
        todo += (current.__context__, current.__cause__)
    return False


if __name__ == "__main__":
    sys.exit(main())
