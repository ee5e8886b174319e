"""The ``failover`` console script's entry (``[project.scripts]``).

The script pip writes imports this module, then rewrites ``sys.argv[0]`` (older pips
compile a regular expression for it) and only then calls :func:`main`: a Ctrl-C in
between would end in a traceback, as no ``try`` of ours runs yet (under load one lands
there). So from this module's import until :func:`orchestrator.__main__.main`
enters its ``try``, a Ctrl-C is held, and raised there (exit 130, one line). A Ctrl-C the
parent set to be ignored stays ignored.
"""

from __future__ import annotations

import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

__all__ = ["main"]

_held: list[int] = []


def _hold(signum: int, frame: FrameType | None) -> None:
    _held.append(signum)


_previous = signal.getsignal(signal.SIGINT)
_holding = _previous is signal.default_int_handler
if _holding:
    signal.signal(signal.SIGINT, _hold)

from orchestrator.__main__ import main as _main  # noqa: E402 (held from here: see above)


def _release() -> None:
    """Put the previous Ctrl-C handler back; raise a Ctrl-C held until now."""
    if _holding:
        signal.signal(signal.SIGINT, _previous)
    if _held:
        _held.clear()  # raised once: a second main() in this process starts clean
        raise KeyboardInterrupt


def main() -> int:
    """Run ``failover`` with ``sys.argv``: :func:`orchestrator.__main__.main`, which releases
    a held Ctrl-C inside its ``try``."""
    return _main(release=_release)
