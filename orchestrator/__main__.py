"""The ``failover`` console script's entry (also ``python -m orchestrator``).

Ctrl-C must end the command quietly with exit 130 at any moment, including
while the command is still importing its modules (pydantic, aiohttp, ...,
a few hundred milliseconds). So this module imports nothing but ``sys``
before the ``try``, and the package it lives in loads its names lazily.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    """Run ``failover`` with ``sys.argv``; 130 (and one line) when interrupted anywhere."""
    try:
        from orchestrator.cli import main as run

        code = run()
        import signal  # loaded long ago by asyncio: free

        # Done: a Ctrl-C while the interpreter shuts down must not turn success into a kill.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return code
    except BaseException as exc:
        if not _interrupted(exc):
            raise
        sys.stderr.write("failover: interrupted\n")
        return 130


def _interrupted(exc: BaseException) -> bool:
    """True if ``exc`` is, or was raised while handling, a KeyboardInterrupt.

    A Ctrl-C can land inside someone's ``finally`` that then fails (argparse's
    intermixed parsing restores attributes it had not yet saved, raising
    AttributeError): the user still pressed Ctrl-C.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
